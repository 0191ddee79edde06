"""Carry what the route / install GPU tests need to a GPU machine with no network.

    python bench/device_wheels.py download OUT [--python-version 3.12]    (here, with pip's registry)
    python3 bench/device_wheels.py install OUT/whl TARGET                  (there, no network)

`download` writes
- OUT/wheelcache/wheels/sglang-0.5.23-...whl: the real SGLang wheel from the test wheel cache
  (tests/realwheels.py) without its five native libraries (Rust extensions of the server and the
  memory cache, 18 of its 37 MiB), so that the tree and the wheels fit the device tool's 64 MiB.
  Every Python file is byte for byte the published one; point DSPARKCTL_WHEEL_CACHE at
  OUT/wheelcache there.
- OUT/whl/: wheels of SGLang's import-time packages for the target interpreter, with their
  dependencies. The list (IMPORT_TIME) was found by importing sglang 0.5.23's
  `sglang.kernels.ops.attention.flash_mla_sm120` (what tests/test_route_gpu.py calls) in a fresh
  CPU venv holding only torch, triton and numpy, installing each missing module until it imported
  (session 35; pillow too, which the list leaves to the machine's torchvision). The v53 suite
  skipped that test for `orjson` alone. About 35 MiB in all; with `--have
  bench/h200_image_packages.txt` (the H200 image's own distributions left out) ~29 MiB, which
  with the tracked tree (~28 MiB) stays under the 64 MiB a device call carries.

`install` installs, with `pip --no-index --no-deps --target`, only the wheels whose top-level
modules the running interpreter cannot import already, so the machine's own packages (torch's
dependencies, transformers', ...) are never shadowed by the carried ones.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from dsparkctl.packages import canonical_name  # PEP 503 names, as doctor compares them

SGLANG_VERSION = "0.5.23"
# Distribution names (pip), not module names.
# Also imported: PIL (pillow), left out for size (7 MiB): the H200 image's torchvision brings it.
IMPORT_TIME = ["aiohttp", "ipython", "msgspec", "orjson", "packaging", "psutil", "pybase64", "pydantic",
               "pydantic-core", "pyzmq", "requests", "starlette", "tqdm"]
PLATFORMS = ["manylinux_2_39_x86_64", "manylinux_2_35_x86_64", "manylinux_2_34_x86_64", "manylinux_2_31_x86_64",
             "manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64", "any"]


def strip_native(src: Path, dest: Path) -> tuple[int, int]:
    """Copy wheel `src` to `dest` without its `.so` members; returns (members kept, dropped)."""
    kept = dropped = 0
    tmp = dest.with_name(dest.name + ".tmp")
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            if info.filename.endswith(".so") or ".so." in info.filename.rsplit("/", 1)[-1]:
                dropped += 1
                continue
            zout.writestr(info, zin.read(info.filename))
            kept += 1
    tmp.replace(dest)
    return kept, dropped


def wheel_top_levels(whl: Path) -> set[str]:
    """The importable top-level names a wheel installs: top_level.txt where the wheel has one,
    else the first path component of its members (packages and single-file modules)."""
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        tops = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        if tops:
            return {line.strip() for line in z.read(tops[0]).decode().splitlines() if line.strip()}
        out = set()
        for n in names:
            first = n.split("/", 1)[0]
            if first.endswith((".dist-info", ".data")):
                continue
            if "/" in n:
                out.add(first)
            elif n.endswith(".py"):
                out.add(first[:-3])
            elif ".cpython-" in n or n.endswith(".so"):
                out.add(first.split(".", 1)[0])
        return out


def missing_wheels(wheels: list[Path], importable=None) -> list[Path]:
    """The wheels to install: those with a top-level module the interpreter cannot import."""
    def found(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            return False

    importable = importable or found
    out = []
    for w in sorted(wheels):
        tops = {t for t in wheel_top_levels(w) if t.isidentifier()}  # not auditwheel's `pyzmq.libs`
        public = [t for t in tops if not t.startswith("_")] or sorted(tops)
        if any(not importable(t) for t in public):
            out.append(w)
    return out


def read_have(path: Path) -> set[str]:
    """Distribution names from a file (comma, space or newline separated; `#` starts a comment)."""
    text = "\n".join(line.split("#", 1)[0] for line in path.read_text().splitlines())
    return {canonical_name(n) for n in re.split(r"[,\s]+", text) if n}


def prune_present(wheels: list[Path], have: set[str]) -> list[Path]:
    """Delete the wheels of distributions the target machine already has; returns those deleted.
    `install` would skip them there anyway: leaving them here keeps the carried tree small."""
    dropped = []
    for w in sorted(wheels):
        if canonical_name(w.name.split("-", 1)[0]) in have:
            w.unlink()
            dropped.append(w)
    return dropped


def download(out: Path, python_version: str, have: set[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import realwheels

    src = realwheels.wheel_path("sglang", SGLANG_VERSION)
    cache = out / "wheelcache" / "wheels"
    cache.mkdir(parents=True, exist_ok=True)
    kept, dropped = strip_native(src, cache / src.name)
    print(f"sglang: {kept} members kept, {dropped} native libraries dropped -> {cache / src.name}")
    whl = out / "whl"
    whl.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--only-binary=:all:",
           "--python-version", python_version, "--implementation", "cp", "-d", str(whl)]
    for p in PLATFORMS:
        cmd += ["--platform", p]
    res = subprocess.run(cmd + IMPORT_TIME, capture_output=True, text=True)
    if res.returncode != 0:
        print(f"device_wheels: pip download failed:\n{res.stderr}", file=sys.stderr)
        return 1
    if have:
        dropped = prune_present(sorted(whl.glob("*.whl")), have)
        print(f"left out {len(dropped)} wheels the target already has")
    wheels = sorted(whl.glob("*.whl"))
    size = sum(w.stat().st_size for w in wheels) + (cache / src.name).stat().st_size
    print(f"{len(wheels)} wheels in {whl}; {size / 2**20:.1f} MiB with the sglang wheel")
    return 0


def install(whl_dir: Path, target: Path) -> int:
    wheels = sorted(whl_dir.glob("*.whl"))
    if not wheels:
        print(f"device_wheels: no wheels in {whl_dir}; run `download` where pip has a registry", file=sys.stderr)
        return 2
    need = missing_wheels(wheels)
    print(f"installing {len(need)} of {len(wheels)} wheels (the rest import already): "
          + " ".join(w.name.split("-", 1)[0] for w in need))
    if not need:
        return 0
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
           "--no-cache-dir", "--target", str(target), *map(str, need)]
    return subprocess.run(cmd).returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("download")
    d.add_argument("out")
    d.add_argument("--python-version", default="3.12")
    d.add_argument("--have", type=Path, help="file of distributions the target already has "
                   "(bench/h200_image_packages.txt for the H200 image): their wheels are left out")
    i = sub.add_parser("install")
    i.add_argument("whl_dir")
    i.add_argument("target")
    args = ap.parse_args(argv)
    if args.cmd == "download":
        if args.have is not None and not args.have.is_file():
            print(f"device_wheels: --have {args.have}: no such file", file=sys.stderr)
            return 2
        return download(Path(args.out), args.python_version, read_have(args.have) if args.have else None)
    return install(Path(args.whl_dir), Path(args.target))


if __name__ == "__main__":
    sys.exit(main())
