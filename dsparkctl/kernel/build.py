"""Compile the bundled sparse-MLA kernel into a torch-loadable .so for one GPU arch.

Plain nvcc + the host C++ compiler, driven from here, rather than torch's JIT loader: the
commands and their output land in a log the operator can read, the .so name says its arch,
and the kernel object (the slow part) never needs torch headers. Three steps:
``nvcc -c kernel.cu`` (arch-specific), ``c++ -c binding.cpp`` (torch headers), link against
torch's libraries and the CUDA runtime.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from dsparkctl.resources import kernels_dir

KERNEL_SOURCE = "sparse_mla_decode.cu"
BINDING_SOURCE = "sparse_mla_decode_binding.cpp"
HEADERS = ("sparse_mla_decode.cuh", "sparse_mla_plan.h")
LIB_STEM = "dsparkctl_sparse_mla"
_ARCH_RE = re.compile(r"^sm_(\d{2,3})(a?)$")
# Archs the kernel is written and compile-checked for (mma.sync bf16 needs sm_80+).
SHIPPED_ARCHS = ("sm_120a", "sm_121a", "sm_90a")


class BuildError(RuntimeError):
    """Compilation failed; the message names the log with the compiler output."""


def source_files() -> list[Path]:
    """Every file whose content decides the built library (for hashing and copying)."""
    kd = kernels_dir()
    return [kd / KERNEL_SOURCE, kd / BINDING_SOURCE, *(kd / h for h in HEADERS)]


def source_hash() -> str:
    """sha256 over the kernel sources (name + bytes), hex; the build cache key's core."""
    h = hashlib.sha256()
    for f in sorted(source_files(), key=lambda p: p.name):
        h.update(f.name.encode())
        h.update(b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def gencode_flag(arch: str) -> str:
    """``sm_120a`` -> ``-gencode=arch=compute_120a,code=sm_120a`` (the form that keeps the
    arch-specific target; the ``-arch=sm_90a`` shorthand also runs a generic pass)."""
    m = _ARCH_RE.match(arch)
    if not m:
        raise ValueError(f"arch must look like 'sm_120a', 'sm_121a' or 'sm_90a', got {arch!r}")
    if int(m.group(1)) < 80:
        raise ValueError(f"{arch}: the kernel needs bf16 mma.sync (sm_80 or newer)")
    return f"-gencode=arch=compute_{m.group(1)}{m.group(2)},code={arch}"


def arch_for_capability(major: int, minor: int) -> str:
    """The arch string to build for a device capability: the 'a' variant where one exists."""
    cc = major * 10 + minor
    return f"sm_{cc}a" if cc in (90, 100, 101, 103, 110, 120, 121) else f"sm_{cc}"


def find_nvcc() -> Path | None:
    """nvcc from $CUDA_HOME / $CUDA_PATH, PATH, or /usr/local/cuda, resolved through wrappers."""
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            cand = Path(os.environ[env]) / "bin" / "nvcc"
            if cand.is_file():
                return cand
    which = shutil.which("nvcc")
    if which:
        return Path(which)
    cand = Path("/usr/local/cuda/bin/nvcc")
    return cand if cand.is_file() else None


def cuda_home(nvcc: Path) -> Path:
    """The CUDA root for ``nvcc``; PATH entries are often wrapper scripts, so fall back to
    asking nvcc itself where its own include directory is."""
    root = nvcc.resolve().parent.parent
    if (root / "include" / "cuda_runtime.h").is_file():
        return root
    out = subprocess.run([str(nvcc), "--dryrun", "--version"], capture_output=True, text=True)
    m = re.search(r"TOP=(\S+)", out.stderr + out.stdout)
    if m and (Path(m.group(1)) / "include" / "cuda_runtime.h").is_file():
        return Path(m.group(1))
    for cand in (Path("/usr/local/cuda"), *sorted(Path("/usr/local").glob("cuda-*"), reverse=True)):
        if (cand / "include" / "cuda_runtime.h").is_file():
            return cand
    raise BuildError(f"cannot find the CUDA include directory for {nvcc}; set CUDA_HOME")


def kernel_compile_command(arch: str, out_obj: Path, nvcc: Path | None = None, extra: Sequence[str] = ()) -> list[str]:
    """The torch-free ``nvcc -c`` of the kernel (also what CI's compile check runs)."""
    nv = nvcc or find_nvcc()
    if nv is None:
        raise BuildError("nvcc not found (set CUDA_HOME or put nvcc on PATH)")
    return [
        str(nv),
        "-c",
        str(kernels_dir() / KERNEL_SOURCE),
        "-o",
        str(out_obj),
        "-std=c++17",
        "-O3",
        "-Xcompiler",
        "-fPIC",
        "-Xptxas",
        "-v",
        gencode_flag(arch),
        *extra,
    ]


def _run(cmd: list[str], log: list[str]) -> None:
    log.append("$ " + " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    log.append(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise BuildError(f"command failed (exit {proc.returncode}): {cmd[0]} ... ")


def build_extension(
    arch: str,
    out_dir: Path,
    log_path: Path,
    torch_include: Sequence[str] | None = None,
    torch_lib: Sequence[str] | None = None,
    cxx11_abi: bool | None = None,
    extra_nvcc: Sequence[str] = (),
) -> Path:
    """Build ``<out_dir>/dsparkctl_sparse_mla_<arch>.so`` and return its path.

    torch's include/lib directories and C++ ABI default to the torch importable here; pass
    them to build for another environment. The full compiler output goes to ``log_path``
    (written even on failure, then BuildError names it). ``extra_nvcc`` is for the bench
    scripts only (e.g. ``-DDSPARKCTL_SMALL_MIN_BLOCKS=1``: SM120's register budget on an H200,
    so the H200 runs the code SM120 runs); install-kernels never passes it.
    """
    gencode = gencode_flag(arch)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log: list[str] = [f"# dsparkctl kernel build for {arch}", f"# sources {source_hash()}"]
    try:
        nvcc = find_nvcc()
        if nvcc is None:
            raise BuildError("nvcc not found (set CUDA_HOME or put nvcc on PATH)")
        home = cuda_home(nvcc)
        if torch_include is None or torch_lib is None or cxx11_abi is None:
            import torch
            import torch.utils.cpp_extension as cpp_ext

            torch_include = torch_include or cpp_ext.include_paths("cpu")
            torch_lib = torch_lib or cpp_ext.library_paths("cpu")
            cxx11_abi = bool(torch._C._GLIBCXX_USE_CXX11_ABI) if cxx11_abi is None else cxx11_abi
            log.append(f"# torch {torch.__version__} cuda {torch.version.cuda}")
        kobj = out_dir / "sparse_mla_decode.o"
        bobj = out_dir / "sparse_mla_decode_binding.o"
        so = out_dir / f"{LIB_STEM}_{arch}.so"
        kcmd = kernel_compile_command(arch, kobj, nvcc, extra_nvcc)
        assert gencode in kcmd
        cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or "c++"
        incs = [f"-I{p}" for p in (*torch_include, str(home / "include"), str(kernels_dir()))]
        bcmd = [
            cxx, "-c", str(kernels_dir() / BINDING_SOURCE), "-o", str(bobj), "-std=c++17", "-O2",
            "-fPIC", f"-D_GLIBCXX_USE_CXX11_ABI={int(bool(cxx11_abi))}", *incs,
        ]  # fmt: skip
        # Compile both objects concurrently: the binding (torch headers) is the slow one.
        log.append("$ " + " ".join(kcmd))
        log.append("$ " + " ".join(bcmd))
        kp = subprocess.Popen(kcmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        bp = subprocess.Popen(bcmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        kout, _ = kp.communicate()
        bout, _ = bp.communicate()
        log.append("## kernel\n" + kout)
        log.append("## binding\n" + bout)
        if kp.returncode != 0 or bp.returncode != 0:
            raise BuildError(f"compilation failed (kernel exit {kp.returncode}, binding exit {bp.returncode})")
        libdirs = [*torch_lib, str(home / "lib64"), str(home / "lib")]
        lcmd = [
            cxx, "-shared", "-o", str(so), str(kobj), str(bobj),
            *(f"-L{d}" for d in libdirs), *(f"-Wl,-rpath,{d}" for d in torch_lib),
            "-lc10", "-lc10_cuda", "-ltorch", "-ltorch_cpu", "-ltorch_cuda", "-lcudart",
        ]  # fmt: skip
        _run(lcmd, log)
        return so
    except BuildError as exc:
        raise BuildError(f"{exc}; see {log_path}") from exc
    finally:
        log_path.write_text("\n".join(log) + "\n")


def build_cached(arch: str | None = None) -> Path:
    """Build for ``arch`` (default: the current CUDA device) against the torch importable here,
    or reuse: the same cache and install prefix as ``dsparkctl install-kernels``, so smoke,
    the tests and the routed server share one build instead of compiling twice."""
    from dsparkctl import install
    from dsparkctl.errors import UsageError

    if arch is None:
        import torch

        if not torch.cuda.is_available():
            raise BuildError("no CUDA device to pick an arch from; pass arch='sm_120a' (etc.)")
        arch = arch_for_capability(*torch.cuda.get_device_capability())
    try:
        return install.build_and_install(arch, install.local_torch(),
                                         install.default_prefix()).library
    except UsageError as exc:
        raise BuildError(str(exc)) from exc
