"""Helpers for patch tests: real-wheel target trees and whole-tree snapshots."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import realwheels


def snapshot(root: Path) -> dict[str, str]:
    """Every file, link and directory under ``root`` with its content hash and mode.

    Directories are included so that a leftover empty folder (or a state dir
    that was not cleaned up) counts as a difference.
    """
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        for d in dirnames:
            p = os.path.join(dirpath, d)
            rel = os.path.normpath(os.path.join(rel_dir, d))
            out[rel + "/"] = "link:" + os.readlink(p) if os.path.islink(p) else "dir"
        for f in filenames:
            p = os.path.join(dirpath, f)
            rel = os.path.normpath(os.path.join(rel_dir, f))
            if os.path.islink(p):
                out[rel] = "link:" + os.readlink(p)
                continue
            h = hashlib.sha256()
            with open(p, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            out[rel] = f"{h.hexdigest()}:{oct(os.stat(p).st_mode & 0o7777)}"
    return out


def diff_snapshots(a: dict[str, str], b: dict[str, str]) -> list[str]:
    keys = sorted(set(a) | set(b))
    return [f"{k}: {a.get(k)} -> {b.get(k)}" for k in keys if a.get(k) != b.get(k)]


def sglang_tree(dest: Path, version: str) -> Path:
    """A writable site-packages holding the real sglang ``version`` (package + dist-info)."""
    return realwheels.site_packages(dest, [("sglang", version)], copy=True, only=["sglang"])


def flashinfer_tree(dest: Path, version: str) -> Path:
    return realwheels.site_packages(dest, [("flashinfer-python", version)], copy=True,
                                    only=["flashinfer"])


SGLANG_FILE = "sglang/kernels/ops/attention/flash_mla_sm120.py"
FI_PY = "flashinfer/mla/_sparse_mla_sm120.py"
FI_CU = "flashinfer/data/csrc/sparse_mla_sm120_decode_dsv4.cu"
