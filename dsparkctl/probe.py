"""What is installed: the host, the GPUs, nvcc, and the *target* Python environment.

The target is the environment the SGLang server runs in, which is often not
the one dsparkctl runs in. Three ways to reach it:

- ``probe_current()``: this interpreter, read statically from its
  ``sys.path`` (no ``importlib.metadata`` walk, no imports);
- ``probe_python(path)``: another interpreter, which runs the stdlib-only
  ``target_probe.py`` and answers in JSON (its own import machinery, so
  editable installs and ``.pth`` files resolve as the server will see them);
- ``probe_site_packages(dir)``: an unpacked tree read offline (a container
  image's site-packages), nothing executed.

Everything here is I/O; judging what was found is the rules' job. Nothing
imports torch or flashinfer, and slow imports (pynvml, psutil) are avoided
or deferred, because the doctor's whole run has a budget of about 0.3 s.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from dsparkctl import packages
from dsparkctl.envvars import collect as collect_env
from dsparkctl.errors import UsageError
from dsparkctl.gpus import GpuReport, probe_gpus

Source = Literal["current", "python", "site-packages"]


@dataclass
class TargetEnv:
    """The Python environment that will serve: versions and where things live.

    ``packages`` has every tracked distribution as a key (``None`` when not
    installed) so that "absent" and "not looked for" cannot be confused.
    ``files`` maps import names (``flashinfer``, ``flashinfer_jit_cache``,
    ``torch``...) to the folder or file the import would load.
    ``duplicates`` lists distributions found more than once on the path
    (a broken upgrade, or user site shadowing the venv).
    """

    python: str | None
    python_version: str | None
    site_packages: list[str]
    packages: dict[str, str | None]
    torch_cuda: str | None
    source: Source
    files: dict[str, str] = field(default_factory=dict)
    duplicates: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def flashinfer_site(self) -> Path | None:
        """The folder that holds the ``flashinfer`` package (what the dispatch reader reads)."""
        loc = self.files.get("flashinfer")
        return Path(loc).parent if loc else None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _tracked_versions(scan: packages.SiteScan) -> dict[str, str | None]:
    return scan.versions(packages.TRACKED_DISTRIBUTIONS)


def _duplicates(scan: packages.SiteScan) -> dict[str, list[str]]:
    return {name: [f"{r.version} ({r.path})" for r in recs] for name, recs in scan.duplicates.items()}


def _from_scan(scan: packages.SiteScan, *, python: str | None, python_version: str | None,
               source: Source) -> TargetEnv:
    files = {m: str(p) for m, p in scan.modules.items()}
    torch_dir = scan.modules.get("torch")
    return TargetEnv(
        python=python,
        python_version=python_version,
        site_packages=[str(d) for d in scan.site_dirs],
        packages=_tracked_versions(scan),
        torch_cuda=packages.torch_cuda_version(torch_dir) if torch_dir and torch_dir.is_dir() else None,
        source=source,
        files=files,
        duplicates=_duplicates(scan),
    )


def current_search_path() -> list[str]:
    """This interpreter's import path, plus site dirs a ``-S`` start left off it."""
    dirs = [p or os.getcwd() for p in sys.path]
    extra = list(getattr(site, "getsitepackages", list)())
    if site.ENABLE_USER_SITE:
        extra.append(site.getusersitepackages())
    return dirs + [p for p in extra if p not in dirs]


def probe_current() -> TargetEnv:
    """The interpreter running dsparkctl, read statically (a few ms)."""
    scan = packages.scan(current_search_path())
    return _from_scan(scan, python=sys.executable,
                      python_version=".".join(map(str, sys.version_info[:3])), source="current")


_PYTHON_NAME = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[dmt]?(\.exe)?$", re.IGNORECASE)


def _looks_like_python(path: Path) -> bool:
    """Refuse to run a non-Python binary with our source as its ``-c`` argument.

    ``sh -c <python source>`` would execute the probe as shell, so the name
    (as given or after resolving links) must be an interpreter's.
    """
    names = {path.name, path.resolve().name}
    return any(_PYTHON_NAME.match(n) for n in names)


def _check_interpreter(path: str) -> Path:
    p = Path(path).expanduser()
    hint = "pass the serving environment's interpreter, e.g. /opt/venv/bin/python"
    if os.sep not in path and not p.exists():
        found = shutil.which(path)  # a bare name: `--python python3.11`
        if found:
            p = Path(found)
    if not p.exists():
        raise UsageError(f"--python {path}: no such file; {hint}")
    if p.is_dir():
        for cand in (p / "bin" / "python", p / "bin" / "python3"):
            if cand.exists():
                raise UsageError(f"--python {path} is a folder; did you mean --python {cand}?")
        raise UsageError(f"--python {path} is a folder, not an interpreter; {hint}")
    if not os.access(p, os.X_OK):
        raise UsageError(f"--python {path} is not executable; {hint}")
    if not _looks_like_python(p):
        raise UsageError(f"--python {path} does not look like a Python interpreter "
                         f"(expected a file named python, python3, python3.11...); {hint}")
    return p


def _target_probe_source() -> str:
    return Path(__file__).with_name("target_probe.py").read_text(encoding="utf-8")


def probe_python(path: str, timeout: float = 20) -> TargetEnv:
    """Another interpreter (a serving venv), asked through the stdlib-only probe.

    Not run with ``-I``: isolated mode drops ``PYTHONPATH`` and the user site,
    which the server launched from the same shell does see.
    """
    exe = _check_interpreter(path)
    request = json.dumps({"dists": list(packages.TRACKED_DISTRIBUTIONS),
                          "modules": list(packages.TRACKED_MODULES)})
    try:
        res = subprocess.run([str(exe), "-c", _target_probe_source(), request],
                             capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise UsageError(f"--python {path} did not answer within {timeout:g} s; "
                         f"check that it starts (try: {path} -c 'print(1)')") from None
    except OSError as exc:
        raise UsageError(f"--python {path} could not be run: {exc.strerror or exc}") from None
    data: Any = None
    if res.returncode == 0:
        try:
            data = json.loads(res.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            data = None
    if not isinstance(data, dict) or data.get("probe") != "dsparkctl.target_probe":
        tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"--python {path} did not answer the probe (exit {res.returncode}: {tail}); "
                         f"it must be a Python >= 3.8 interpreter")
    if data.get("has_metadata") is False:
        raise UsageError(f"--python {path} is Python {data.get('python_version')}, which has no "
                         f"importlib.metadata; the serving stack needs Python >= 3.8")
    files = {str(k): str(v) for k, v in (data.get("files") or {}).items()}
    return TargetEnv(
        python=data.get("executable") or str(exe),
        python_version=data.get("python_version"),
        site_packages=[str(p) for p in data.get("site_packages") or []],
        packages=packages.versions_from(data.get("packages") or {}),
        torch_cuda=data.get("torch_cuda"),
        source="python",
        files=files,
        duplicates={packages.canonical_name(str(k)): [str(x) for x in v]
                    for k, v in (data.get("duplicates") or {}).items()},
    )


# Where a site-packages folder usually sits inside a venv, a conda env or an image root.
_SITE_GLOBS = ("lib/python3*/site-packages", "lib64/python3*/site-packages",
               "usr/lib/python3*/dist-packages", "usr/lib/python3*/site-packages",
               "usr/local/lib/python3*/dist-packages", "usr/local/lib/python3*/site-packages",
               "opt/conda/lib/python3*/site-packages", "root/.local/lib/python3*/site-packages")


def _site_candidates(root: Path) -> list[str]:
    out: list[str] = []
    for pattern in _SITE_GLOBS:
        out.extend(str(p) for p in sorted(root.glob(pattern)) if p.is_dir())
    return out[:5]


def probe_site_packages(dir: Path) -> TargetEnv:
    """An unpacked site-packages tree, read offline; nothing in it is executed."""
    root = Path(dir).expanduser().absolute()
    if not root.exists():
        raise UsageError(f"--site-packages {dir}: no such folder")
    if not root.is_dir():
        raise UsageError(f"--site-packages {dir} is not a folder; pass the folder that holds the "
                         f"*.dist-info entries")
    scan = packages.scan([root, *packages.pth_paths(root)])
    if root not in scan.site_dirs:
        found = _site_candidates(root)
        hint = f"; found: {', '.join(found)}" if found else ""
        raise UsageError(f"--site-packages {dir} holds no *.dist-info or *.egg-info; pass the "
                         f"site-packages folder itself{hint}")
    m = re.search(r"python(\d+\.\d+)", str(root))
    return _from_scan(scan, python=None, python_version=m.group(1) if m else None,
                      source="site-packages")


@dataclass
class HostInfo:
    """The machine: enough to recognise a GB10 (aarch64) or a starved container."""

    os: str
    kernel: str
    machine: str
    cpu_model: str | None
    cores: int | None
    cores_usable: int | None
    ram_total_bytes: int | None
    hostname: str = ""  # names the node when per-node reports are merged (report merge)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# Arm "CPU part" ids seen on the machines this tool targets (/proc/cpuinfo has
# no model name on aarch64).
_ARM_PARTS = {"0xd4f": "Neoverse-V2 (Grace)", "0xd85": "Cortex-X925", "0xd87": "Cortex-A725",
              "0xd8e": "Neoverse-N3", "0xd84": "Neoverse-V3"}


def _os_pretty_name() -> str | None:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith("PRETTY_NAME="):
                        return line.split("=", 1)[1].strip().strip('"')
        except OSError:
            continue
    return None


def _cpu_model() -> str | None:
    """First CPU's model from /proc/cpuinfo, read only as far as needed (it is slow on big boxes)."""
    part = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                if key in ("model name", "hardware"):
                    return value.strip()
                if key == "cpu part":
                    part = value.strip()
                if not line.strip():
                    break
    except OSError:
        return None
    if part:
        return _ARM_PARTS.get(part, f"Arm CPU part {part}")
    return None


def _ram_total() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:  # not Linux: psutil (about 20 ms to import, so only here)
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:
        return None


def probe_host() -> HostInfo:
    """OS, kernel, CPU and RAM, from /proc and ``os.uname`` where possible."""
    u = os.uname()
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    return HostInfo(
        os=_os_pretty_name() or u.sysname,
        kernel=u.release,
        machine=u.machine,
        cpu_model=_cpu_model(),
        cores=os.cpu_count(),
        cores_usable=usable,
        ram_total_bytes=_ram_total(),
        hostname=u.nodename,
    )


@dataclass(frozen=True)
class NvccInfo:
    path: str
    version: str | None  # "13.0.88"
    release: str | None  # "13.0"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


_NVCC_RELEASE = re.compile(r"release (\d+\.\d+), V(\d+(?:\.\d+)+)")


def nvcc_candidates(environ: Mapping[str, str] | None = None) -> list[str]:
    """Where JIT builds look for nvcc, in the order torch's cpp_extension and FlashInfer use."""
    env = os.environ if environ is None else environ
    out: list[str] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            out.append(os.path.join(env[var], "bin", "nvcc"))
    which = shutil.which("nvcc", path=env.get("PATH"))
    if which:
        out.append(which)
    out.append("/usr/local/cuda/bin/nvcc")
    return list(dict.fromkeys(out))


def probe_nvcc(environ: Mapping[str, str] | None = None, timeout: float = 5.0) -> NvccInfo | None:
    """The first nvcc a JIT build would use, and its version; ``None`` when there is none."""
    for cand in nvcc_candidates(environ):
        if not (os.path.isfile(cand) and os.access(cand, os.X_OK)):
            continue
        try:
            res = subprocess.run([cand, "--version"], capture_output=True, text=True,
                                 timeout=timeout, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return NvccInfo(path=cand, version=None, release=None)
        m = _NVCC_RELEASE.search(res.stdout)
        return NvccInfo(path=cand, version=m.group(2) if m else None,
                        release=m.group(1) if m else None)
    return None


def nvcc_version(environ: Mapping[str, str] | None = None) -> str | None:
    """``"13.0.88"`` for the nvcc a JIT build would use, or ``None``."""
    info = probe_nvcc(environ)
    return info.version if info else None


@dataclass
class ProbeReport:
    """Everything probed for one doctor run, with how long each part took."""

    host: HostInfo
    gpus: GpuReport
    nvcc: NvccInfo | None
    target: TargetEnv
    env: dict[str, str]
    timings_ms: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host.to_json(),
            "gpus": self.gpus.to_json(),
            "nvcc": self.nvcc.to_json() if self.nvcc else None,
            "target": self.target.to_json(),
            "env": self.env,
            "timings_ms": self.timings_ms,
        }


def probe_target(python: str | None = None, site_packages: Path | None = None) -> TargetEnv:
    """The target environment the flags name (``--python`` / ``--site-packages``), else this one."""
    if python and site_packages:
        raise UsageError("--python and --site-packages name two different targets; pass one")
    if python:
        return probe_python(python)
    if site_packages is not None:
        return probe_site_packages(site_packages)
    return probe_current()


def probe_all(python: str | None = None, site_packages: Path | None = None,
              environ: Mapping[str, str] | None = None, *, gpus: bool = True,
              nvml: Any | None = None) -> ProbeReport:
    """Run every probe once; ``gpus=False`` skips NVML (offline ``--site-packages`` runs)."""
    timings: dict[str, float] = {}

    def timed(name: str, fn: Any, *args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            timings[name] = round((time.perf_counter() - t0) * 1e3, 3)

    target = timed("target", probe_target, python, site_packages)
    host = timed("host", probe_host)
    gpu_report = timed("gpus", probe_gpus, nvml) if gpus else GpuReport.empty("GPU probe skipped")
    nvcc = timed("nvcc", probe_nvcc, environ)
    env = timed("env", collect_env, os.environ if environ is None else environ)
    return ProbeReport(host=host, gpus=gpu_report, nvcc=nvcc, target=target, env=env,
                       timings_ms=timings)
