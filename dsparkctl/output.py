"""Printing: rich for people, plain JSON for machines, one-line errors.

``--json`` must print only JSON on stdout (scripts pipe it), so every human
message goes through ``err_console`` (stderr) or is suppressed in JSON mode.
"""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=False, default=str))
    sys.stdout.write("\n")
    sys.stdout.flush()


def _json_requested(argv: list[str]) -> str | None:
    """The command's name when this invocation asked for ``--json`` (None otherwise).

    Read from argv because a usage error can be raised before (or outside) the command
    function that parsed the flag; a script piping ``--json`` still gets a document.
    """
    args = argv[1:]
    if "--json" not in args:
        return None
    words = [a for a in args if not a.startswith("-")]
    return words[0] if words else "dsparkctl"


def fail_usage(message: str, code: int = 2) -> NoReturn:
    """One clear line on stderr and the documented exit code; never a traceback. Under
    ``--json`` stdout also gets a document, so a script parsing it sees why there is no
    verdict instead of an empty stream."""
    err_console.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)
    command = _json_requested(sys.argv)
    if command is not None:
        from dsparkctl.findings import SCHEMA_VERSION

        emit_json({"schema_version": SCHEMA_VERSION, "command": command, "verdict": "unknown",
                   "error": message, "findings": []})
    raise typer.Exit(code)
