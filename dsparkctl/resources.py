"""Where the bundled kernel sources and patch specs are.

In a wheel they are package data under ``dsparkctl/_data/``; in a source
checkout (editable install, tests) they are the top-level ``kernels/`` and
``patches/`` folders. Both layouts must work, so every lookup goes through here.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for cand in (_PKG / "_data" / name, _PKG.parent / name):
        if cand.is_dir():
            return cand
    raise FileNotFoundError(
        f"dsparkctl's bundled '{name}/' folder is missing (looked in {_PKG / '_data'} and "
        f"{_PKG.parent}); reinstall dsparkctl"
    )


def kernels_dir() -> Path:
    return _find("kernels")


def patches_dir() -> Path:
    return _find("patches")
