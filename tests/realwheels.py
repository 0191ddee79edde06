"""Real published wheels for tests: pip-downloaded once (no deps), cached, unpacked.

Tests that read or patch FlashInfer / SGLang run against these, never against
hand-written imitations. The cache survives between runs
(``DSPARKCTL_WHEEL_CACHE``, default ``~/.cache/dsparkctl/test-wheels``);
a test that must modify a tree copies it first with ``site_packages``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterable
from pathlib import Path

CACHE = Path(os.environ.get("DSPARKCTL_WHEEL_CACHE",
                            Path.home() / ".cache" / "dsparkctl" / "test-wheels"))

# sglang publishes platform wheels only; ask for one that unpacks anywhere.
_PLATFORM_ARGS = [
    "--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp",
    "--platform", "manylinux_2_34_x86_64", "--platform", "manylinux_2_28_x86_64",
    "--platform", "manylinux2014_x86_64", "--platform", "any",
]


def _norm(name: str) -> str:
    return name.replace("-", "_").lower()


def wheel_path(name: str, version: str) -> Path:
    """Download ``name==version`` (no deps) into the cache and return the wheel."""
    dl = CACHE / "wheels"
    dl.mkdir(parents=True, exist_ok=True)
    pattern = f"{_norm(name)}-{version}-*.whl"
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        hits = sorted(dl.glob(pattern))
        if not hits:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                   "--disable-pip-version-check", "-d", str(dl), f"{name}=={version}"]
            res = subprocess.run(cmd + _PLATFORM_ARGS, capture_output=True, text=True)
            if res.returncode != 0:
                res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                raise RuntimeError(f"pip download {name}=={version} failed:\n{res.stderr}")
            hits = sorted(dl.glob(pattern))
        if not hits:
            raise RuntimeError(f"pip download {name}=={version} produced no {pattern}")
        return hits[0]


def unpacked(name: str, version: str) -> Path:
    """The wheel unpacked once into the cache; treat it as read-only."""
    dest = CACHE / "unpacked" / f"{_norm(name)}-{version}"
    if (dest / ".complete").exists():
        return dest
    whl = wheel_path(name, version)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (dest / ".complete").exists():
            tmp = dest.with_name(dest.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            with zipfile.ZipFile(whl) as zf:
                zf.extractall(tmp)
            shutil.rmtree(dest, ignore_errors=True)
            tmp.rename(dest)
            (dest / ".complete").touch()
    return dest


def site_packages(dest: Path, specs: Iterable[tuple[str, str]], *, copy: bool = False,
                  only: Iterable[str] | None = None) -> Path:
    """Assemble a site-packages folder from real wheels.

    ``copy=False`` symlinks the top-level entries (fast, for read-only tests);
    ``copy=True`` copies them (for tests that patch). ``only`` limits the
    top-level entries taken from each wheel besides its ``.dist-info``
    (e.g. only ``sglang`` without bundled extras).
    """
    dest.mkdir(parents=True, exist_ok=True)
    keep = set(only) if only is not None else None
    for name, version in specs:
        root = unpacked(name, version)
        for entry in root.iterdir():
            if entry.name == ".complete":
                continue
            if keep is not None and not entry.name.endswith(".dist-info") and entry.name not in keep:
                continue
            target = dest / entry.name
            if target.exists() or target.is_symlink():
                continue
            if copy:
                if entry.is_dir():
                    shutil.copytree(entry, target, symlinks=True)
                else:
                    shutil.copy2(entry, target)
            else:
                target.symlink_to(entry)
    return dest
