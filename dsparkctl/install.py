"""``install-kernels``: build the bundled kernel for the target GPU and torch, install it
with a manifest, and route SGLang to it through the versioned patch engine.

The build runs in *this* process against the *target's* torch headers and
libraries (asked of the target interpreter), so a build host needs no torch of
its own and a serving venv needs no dsparkctl. Builds are cached by everything
that decides the binary (dsparkctl version, kernel source hash, arch, torch
version, torch's CUDA version): a second run with nothing changed copies
nothing and compiles nothing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsparkctl import __version__
from dsparkctl.errors import UsageError

MANIFEST = "manifest.json"
MANIFEST_SCHEMA = 1
_CC_TO_ARCH = {"12.0": "sm_120a", "12.1": "sm_121a", "9.0": "sm_90a"}
_ARCH_RE = re.compile(r"^(?:sm_?|compute_)?(\d{1,2})\.?(\d)a?$")

# Asked of the target interpreter: where its torch lives and how it was built.
_TORCH_QUERY = (
    "import json, torch, torch.utils.cpp_extension as c\n"
    "print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda,"
    " 'include': c.include_paths('cpu'), 'lib': c.library_paths('cpu'),"
    " 'cxx11_abi': bool(torch._C._GLIBCXX_USE_CXX11_ABI)}))\n"
)


def user_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dsparkctl"


def default_prefix() -> Path:
    return user_cache() / "install"


def build_cache() -> Path:
    return Path(os.environ.get("DSPARKCTL_BUILD_CACHE") or user_cache() / "builds")


def normalize_arch(text: str) -> str:
    """``9.0`` / ``9.0a`` / ``sm_90a`` / ``90a`` / ``12.0`` / ``sm_120a`` -> ``sm_90a`` / ``sm_120a``."""
    t = text.strip().lower()
    m = _ARCH_RE.match(t)
    if m:
        cc = f"{int(m.group(1))}.{m.group(2)}"
        if cc in _CC_TO_ARCH:
            return _CC_TO_ARCH[cc]
    raise UsageError(f"--arch {text!r}: the bundled kernel ships for 12.0 (sm_120a, RTX PRO 6000 / "
                     "RTX 5090), 12.1 (sm_121a, GB10) and 9.0 (sm_90a, H100/H200)")


def arch_from_gpus(ccs: list[str]) -> str:
    known = sorted({_CC_TO_ARCH[c] for c in ccs if c in _CC_TO_ARCH})
    if not ccs:
        raise UsageError("no NVIDIA GPU found to build for; pass --arch (12.0, 12.1 or 9.0), "
                         "e.g. on a build host")
    if not known:
        raise UsageError(f"GPU compute capability {', '.join(sorted(set(ccs)))} is not one the "
                         "bundled kernel ships for; pass --arch to build for another GPU")
    if len(known) > 1:
        raise UsageError(f"this machine has GPUs of several architectures ({', '.join(known)}); "
                         "pass --arch to choose")
    return known[0]


@dataclass(frozen=True)
class TorchInfo:
    version: str
    cuda: str | None
    include: tuple[str, ...]
    lib: tuple[str, ...]
    cxx11_abi: bool


def query_torch(python: str, timeout: float = 120) -> TorchInfo:
    """The target interpreter's torch (version, CUDA, headers): the build must match it."""
    try:
        res = subprocess.run([python, "-c", _TORCH_QUERY], capture_output=True, text=True,
                             timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"could not run {python} to ask for its torch ({exc})") from exc
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["?"])[-1]
        raise UsageError(f"{python} cannot import torch ({last}); install-kernels builds against "
                         "the serving environment's torch: point --python at it")
    d = json.loads(res.stdout.strip().splitlines()[-1])
    return TorchInfo(d["torch"], d["cuda"], tuple(d["include"]), tuple(d["lib"]),
                     bool(d["cxx11_abi"]))


def local_torch() -> TorchInfo:
    """The torch of this process (smoke and tests build for the interpreter they run in)."""
    import torch
    import torch.utils.cpp_extension as cpp_ext

    return TorchInfo(torch.__version__, torch.version.cuda, tuple(cpp_ext.include_paths("cpu")),
                     tuple(cpp_ext.library_paths("cpu")), bool(torch._C._GLIBCXX_USE_CXX11_ABI))


def build_key(source_hash: str, arch: str, torch: TorchInfo, nvcc: str = "") -> str:
    """Everything that changes the binary: a PyPI and a conda torch of one version differ in
    the C++ ABI, and two CUDA toolkits in what the library links."""
    h = hashlib.sha256()
    for part in (__version__, source_hash, arch, torch.version, torch.cuda or "none",
                 f"cxx11_abi={int(torch.cxx11_abi)}", nvcc):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:16]


def install_key(arch: str, torch: TorchInfo, source_hash: str | None = None) -> str:
    """The key a build for ``arch`` against ``torch`` with the nvcc found here gets."""
    from dsparkctl.kernel import build

    return build_key(source_hash or build.source_hash(), arch, torch, _nvcc_identity())


def _nvcc_identity() -> str:
    from dsparkctl.kernel import build

    nvcc = build.find_nvcc()
    return str(nvcc.resolve()) if nvcc is not None else "none"


@contextlib.contextmanager
def _key_lock(path: Path) -> Iterator[None]:
    """One builder / installer per key at a time: ranks of a cluster smoke on one node, or
    test workers, all arrive at a cold cache together."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class InstallResult:
    arch: str
    key: str
    library: Path
    manifest: Path
    built: bool
    installed: bool
    log: Path
    steps: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"arch": self.arch, "key": self.key, "library": str(self.library),
                "manifest": str(self.manifest), "built": self.built, "installed": self.installed,
                "log": str(self.log), "steps": self.steps}


def _manifest(arch: str, key: str, so: Path, torch: TorchInfo, source_hash: str,
              flags: list[str]) -> dict[str, Any]:
    digest = sha256_file(so)
    return {
        "schema": MANIFEST_SCHEMA, "tool": f"dsparkctl {__version__}", "key": key, "arch": arch,
        "library": so.name, "library_sha256": digest,
        "files": [{"path": so.name, "sha256": digest}],
        "op": "torch.ops.dsparkctl.sparse_mla_decode",
        "versions": {"dsparkctl": __version__, "torch": torch.version, "cuda": torch.cuda,
                     "python": sys.version.split()[0]},
        "source_sha256": source_hash, "flags": flags,
        "built_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }


def read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def installed_intact(manifest_path: Path) -> bool:
    """The manifest's library exists and still has the hash written at install time."""
    m = read_manifest(manifest_path)
    if not m:
        return False
    lib = manifest_path.parent / m.get("library", "")
    return lib.is_file() and sha256_file(lib) == m.get("library_sha256")


def build_and_install(arch: str, torch: TorchInfo, prefix: Path,
                      step: Callable[[str], None] = lambda _s: None) -> InstallResult:
    """Build (or reuse the cached build) and install into ``prefix/<key>/`` with a manifest."""
    from dsparkctl.kernel import build

    src = build.source_hash()
    key = install_key(arch, torch, src)
    with _key_lock(build_cache() / f"{key}.lock"):
        return _build_and_install_locked(arch, torch, prefix, step, src, key)


def _build_and_install_locked(arch: str, torch: TorchInfo, prefix: Path,
                              step: Callable[[str], None], src: str, key: str) -> InstallResult:
    from dsparkctl.kernel import build

    bdir = build_cache() / key
    so_name = f"{build.LIB_STEM}_{arch}.so"
    so = bdir / so_name
    log = bdir / "build.log"
    built = False
    if not (so.is_file() and (bdir / ".complete").is_file()):
        step(f"compiling the kernel for {arch} against torch {torch.version} "
             f"(CUDA {torch.cuda}); log: {log}")
        tmp = bdir.with_name(bdir.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            out = build.build_extension(arch, tmp, tmp / "build.log", torch_include=torch.include,
                                        torch_lib=torch.lib, cxx11_abi=torch.cxx11_abi)
        except (build.BuildError, OSError) as exc:  # OSError: no c++ / nvcc to start
            keep = build_cache() / f"{key}.failed.log"
            keep.parent.mkdir(parents=True, exist_ok=True)
            if (tmp / "build.log").is_file():
                shutil.copy2(tmp / "build.log", keep)
            shutil.rmtree(tmp, ignore_errors=True)
            raise UsageError(f"kernel build failed: {str(exc).split('; see ')[0]}; compiler "
                             f"output: {keep}") from exc
        except BaseException:  # Ctrl-C mid-compile: no half-built folder left behind
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        (tmp / ".complete").write_text(out.name + "\n")
        shutil.rmtree(bdir, ignore_errors=True)
        tmp.rename(bdir)
        built = True
    else:
        step(f"cached build {key} reused")
    dest = prefix / key
    manifest_path = dest / MANIFEST
    installed = False
    if not installed_intact(manifest_path):
        step(f"installing into {dest}")
        dest.mkdir(parents=True, exist_ok=True)
        tmp_so = dest / f".{so_name}.{os.getpid()}.tmp"
        shutil.copy2(so, tmp_so)
        os.replace(tmp_so, dest / so_name)
        shutil.copy2(log, dest / "build.log")
        flags = [build.gencode_flag(arch), "-O3", "-std=c++17"]
        text = json.dumps(_manifest(arch, key, dest / so_name, torch, src, flags), indent=2)
        tmp_m = dest / f".{MANIFEST}.{os.getpid()}.tmp"
        tmp_m.write_text(text + "\n")
        os.replace(tmp_m, manifest_path)
        installed = True
    else:
        step(f"already installed: {manifest_path}")
    return InstallResult(arch, key, dest / so_name, manifest_path, built, installed, dest / "build.log")
