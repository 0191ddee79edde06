"""Errors the CLI turns into one clear line and exit code 2.

Anything raised as ``UsageError`` is the user's input being wrong (a missing
path, a malformed config, an impossible flag combination): the message must
say what was wrong and what to do, because no traceback will be shown.
"""

from __future__ import annotations


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


class NoVerdictError(Exception):
    """The tool could not judge (no GPU for a GPU-only check, no target): exit code 2."""
