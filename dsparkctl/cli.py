"""The ``dsparkctl`` command line.

Each command lives in ``dsparkctl/commands/<name>.py`` and registers itself
here; command modules import heavy dependencies (torch) only inside the
command body so that ``dsparkctl doctor`` stays fast.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import sys

import typer

from dsparkctl import __version__
from dsparkctl.errors import NoVerdictError
from dsparkctl.output import fail_usage

app = typer.Typer(
    name="dsparkctl",
    help="Diagnose, patch and prove DeepSeek-V4-Flash + DSpark deployments "
    "(SGLang + FlashInfer, SM120/SM121).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_COMMAND_MODULES = ("doctor", "install_kernels", "patches", "smoke", "report")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"dsparkctl {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Diagnose, patch and prove DSpark deployments."""


for _name in _COMMAND_MODULES:
    importlib.import_module(f"dsparkctl.commands.{_name}").register(app)


def main() -> None:
    """Anything not already turned into a finding or a usage error still ends in one line.

    click runs non-standalone so that its own usage errors (``--tp abc``, an unknown option)
    come here: in standalone mode it prints a multi-line box and, under ``--json``, no
    document. ``fail_usage``'s ``typer.Exit`` is converted by hand out here (click turns it
    into ``sys.exit`` only inside ``app()``).
    """
    for stream in (sys.stdout, sys.stderr):
        # An ASCII-only terminal or PYTHONIOENCODING=ascii: a check mark becomes '?', not a
        # UnicodeEncodeError in the middle of a report.
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="replace")  # type: ignore[union-attr]
    try:
        rv = app(standalone_mode=False)
    except NoVerdictError as exc:
        _exit_usage(str(exc))
    except OSError as exc:
        if exc.errno in (errno.EPIPE, errno.ENOSPC) and exc.filename is None:
            # stdout cannot take the report (`| head` closed it, or the disk is full): say so
            # on stderr once, never re-write the report, never a traceback
            _silence_stdout()
            if exc.errno == errno.ENOSPC:
                sys.stderr.write(f"error: cannot write the output: {exc.strerror}\n")
            sys.exit(2 if exc.errno == errno.ENOSPC else 1)
        _exit_usage(f"{exc.filename or 'I/O'}: {exc.strerror or exc}; check the path and its "
                    "permissions")
    except Exception as exc:
        if _is_click(exc, "NoArgsIsHelpError"):  # `dsparkctl` alone: typer printed the help
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        if _is_click(exc, "ClickException"):
            _exit_usage(_click_message(exc))
        if _is_click(exc, "Abort"):
            sys.stderr.write("aborted\n")
            sys.exit(1)
        raise
    sys.exit(rv if isinstance(rv, int) else 0)


def _is_click(exc: BaseException, name: str) -> bool:
    """typer vendors click from 0.28 on (``typer._click``) and depends on it before: the
    exception classes are matched by name so both work."""
    return any(c.__name__ == name for c in type(exc).__mro__)


def _click_message(exc: BaseException) -> str:
    message = exc.format_message()  # type: ignore[attr-defined]
    ctx = getattr(exc, "ctx", None)
    where = getattr(ctx, "command_path", "") or "dsparkctl"
    return f"{where}: {message} (see `{where} --help`)"


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null, so that the interpreter's last flush of what is still
    buffered neither fails again nor prints 'Exception ignored' (Python's documented way)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _exit_usage(message: str) -> None:
    try:
        fail_usage(message)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
