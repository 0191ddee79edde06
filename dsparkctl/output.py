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


def fail_usage(message: str, code: int = 2) -> NoReturn:
    """One clear line on stderr and the documented exit code; never a traceback."""
    err_console.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)
    raise typer.Exit(code)
