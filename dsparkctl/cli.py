"""The ``dsparkctl`` command line.

Each command lives in ``dsparkctl/commands/<name>.py`` and registers itself
here; command modules import heavy dependencies (torch) only inside the
command body so that ``dsparkctl doctor`` stays fast.
"""

from __future__ import annotations

import importlib
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

    ``app()`` runs click in standalone mode, which turns ``typer.Exit`` into ``sys.exit``
    only inside it: out here ``fail_usage``'s ``typer.Exit`` would escape as a traceback
    (and exit 1), so it is converted by hand.
    """
    try:
        app()
    except NoVerdictError as exc:
        _exit_usage(str(exc))
    except OSError as exc:
        _exit_usage(f"{exc.filename or 'I/O'}: {exc.strerror or exc}; check the path and its "
                    "permissions")


def _exit_usage(message: str) -> None:
    try:
        fail_usage(message)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
