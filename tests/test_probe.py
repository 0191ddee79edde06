"""Target-environment probes (current / --python / --site-packages), host, nvcc, import hygiene."""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from packaging.version import Version

from dsparkctl import packages, probe
from dsparkctl.errors import UsageError

REPO = Path(__file__).resolve().parents[1]
VENV_SITE = Path(sysconfig.get_paths()["purelib"])
FI_SG = [("flashinfer-python", "0.6.15.post1"), ("sglang", "0.5.17")]


# --- --site-packages (offline) -------------------------------------------------------------

@pytest.mark.network
def test_site_packages_real_wheels(wheels, tmp_path: Path) -> None:
    site = wheels.site_packages(tmp_path / "lib" / "python3.11" / "site-packages", FI_SG)
    env = probe.probe_site_packages(site)
    assert env.source == "site-packages"
    assert env.packages["flashinfer-python"] == "0.6.15.post1"
    assert env.packages["sglang"] == "0.5.17"
    assert env.packages["torch"] is None and env.torch_cuda is None
    assert set(env.packages) == set(packages.TRACKED_DISTRIBUTIONS)
    assert env.flashinfer_site() == site
    assert (env.flashinfer_site() / "flashinfer" / "mla").is_dir()
    assert env.files["sglang"] == str(site / "sglang")
    assert env.site_packages == [str(site)]
    assert env.python is None and env.python_version == "3.11"
    json.dumps(env.to_json())


def test_site_packages_missing_dir(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such folder"):
        probe.probe_site_packages(tmp_path / "absent")


def test_site_packages_not_a_dir(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UsageError, match="not a folder"):
        probe.probe_site_packages(f)


def test_site_packages_without_metadata_points_to_candidates(tmp_path: Path) -> None:
    """Given a venv root instead of its site-packages, the error names the folder to pass."""
    inner = tmp_path / "lib" / "python3.12" / "site-packages"
    inner.mkdir(parents=True)
    md_dir = next(VENV_SITE.glob("packaging-*.dist-info"))
    shutil.copytree(md_dir, inner / md_dir.name)
    with pytest.raises(UsageError, match=re.escape(str(inner))):
        probe.probe_site_packages(tmp_path)
    with pytest.raises(UsageError, match=r"holds no \*\.dist-info"):
        probe.probe_site_packages(tmp_path / "lib")
    assert probe.probe_site_packages(inner).packages["torch"] is None


# --- current interpreter and --python -----------------------------------------------------

def test_probe_current_matches_importlib_metadata() -> None:
    env = probe.probe_current()
    assert env.source == "current"
    assert env.python == sys.executable
    assert env.packages["torch"] == md.version("torch")
    assert Version(env.packages["torch"]).base_version == "2.13.0"
    for name, version in env.packages.items():
        try:
            expected = md.version(name)
        except md.PackageNotFoundError:
            expected = None
        assert version == expected, name
    assert str(VENV_SITE) in env.site_packages
    assert env.files["torch"] == str(VENV_SITE / "torch")
    assert env.torch_cuda is None  # the CPU wheel


def test_probe_python_agrees_with_probe_current() -> None:
    current = probe.probe_current()
    other = probe.probe_python(sys.executable)
    assert other.source == "python"
    assert other.packages == current.packages
    assert other.packages["torch"] == md.version("torch")
    assert other.torch_cuda == current.torch_cuda
    assert other.python_version == current.python_version
    assert Path(other.python) == Path(sys.executable)
    assert other.files["torch"] == current.files["torch"]
    assert set(other.files) == set(current.files)
    assert str(VENV_SITE) in other.site_packages


@pytest.mark.network
def test_probe_python_separate_serving_venv(wheels, tmp_path: Path) -> None:
    """The real use: a serving venv that is not ours, with FlashInfer + SGLang and no torch."""
    venv = tmp_path / "serve"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    site = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    assert site.is_dir()
    wheels.site_packages(site, FI_SG)
    env = probe.probe_python(str(venv / "bin" / "python"))
    assert env.packages["flashinfer-python"] == "0.6.15.post1"
    assert env.packages["sglang"] == "0.5.17"
    assert env.packages["torch"] is None  # our venv's torch is not visible there
    assert env.flashinfer_site() == site
    assert env.site_packages[0] == str(site)
    # Offline reading of the same folder says the same.
    offline = probe.probe_site_packages(site)
    assert offline.packages == env.packages
    assert offline.flashinfer_site() == env.flashinfer_site()


def test_probe_python_missing(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        probe.probe_python(str(tmp_path / "bin" / "python"))


def test_probe_python_venv_root_suggests_interpreter(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(sys.executable)
    with pytest.raises(UsageError, match=re.escape(f"did you mean --python {tmp_path}/bin/python")):
        probe.probe_python(str(tmp_path))


def test_probe_python_not_executable(tmp_path: Path) -> None:
    p = tmp_path / "python3"
    p.write_text("#!/bin/sh\n")
    p.chmod(0o644)
    with pytest.raises(UsageError, match="not executable"):
        probe.probe_python(str(p))


def test_probe_python_refuses_non_python_binary() -> None:
    ls = shutil.which("ls")
    assert ls
    with pytest.raises(UsageError, match="does not look like a Python interpreter"):
        probe.probe_python(ls)


def _script(tmp_path: Path, body: str) -> str:
    p = tmp_path / "python3"
    p.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    p.chmod(0o755)
    return str(p)


def test_probe_python_garbage_output(tmp_path: Path) -> None:
    path = _script(tmp_path, "echo 'Python 2.7.18'\n")
    with pytest.raises(UsageError, match="did not answer the probe"):
        probe.probe_python(path)


def test_probe_python_failing_interpreter(tmp_path: Path) -> None:
    path = _script(tmp_path, "echo 'SyntaxError: invalid syntax' >&2\nexit 1\n")
    with pytest.raises(UsageError, match=r"exit 1: SyntaxError: invalid syntax"):
        probe.probe_python(path)


def test_probe_python_timeout(tmp_path: Path) -> None:
    path = _script(tmp_path, "exec sleep 30\n")
    with pytest.raises(UsageError, match=r"did not answer within 0\.5 s"):
        probe.probe_python(path, timeout=0.5)


def test_target_probe_runs_standalone() -> None:
    """``python target_probe.py`` by hand: every distribution, stdlib only."""
    script = REPO / "dsparkctl" / "target_probe.py"
    res = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True,
                         check=True)
    data = json.loads(res.stdout)
    names = {packages.canonical_name(n) for n in data["packages"]}
    assert {"torch", "pytest", "packaging"} <= names
    assert data["executable"] == sys.executable


def test_target_probe_source_is_stdlib_only() -> None:
    import ast

    tree = ast.parse((REPO / "dsparkctl" / "target_probe.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module.split(".")[0])
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_probe_target_rejects_two_targets(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="pass one"):
        probe.probe_target(python=sys.executable, site_packages=tmp_path)


# --- host, nvcc, everything ----------------------------------------------------------------

def test_probe_host() -> None:
    import platform

    import psutil

    host = probe.probe_host()
    assert host.cores == os.cpu_count()
    assert host.ram_total_bytes == psutil.virtual_memory().total
    assert host.machine == platform.machine()
    assert host.kernel == platform.release()
    if sys.platform.startswith("linux"):
        assert host.cpu_model
        try:
            expected = platform.freedesktop_os_release()["PRETTY_NAME"]
        except (OSError, KeyError):
            expected = "Linux"
        assert host.os == expected


def _fake_nvcc(root: Path, release: str, build: str) -> Path:
    """A CUDA_HOME whose bin/nvcc prints the banner real nvcc prints."""
    (root / "bin").mkdir(parents=True)
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        echo 'nvcc: NVIDIA (R) Cuda compiler driver'
        echo 'Copyright (c) 2005-2025 NVIDIA Corporation'
        echo 'Cuda compilation tools, release {release}, V{build}'
        echo 'Build cuda_{release}.r{release}/compiler.35404655_0'
        """))
    nvcc.chmod(0o755)
    return nvcc


def test_nvcc_cuda_home_wins(tmp_path: Path) -> None:
    nvcc = _fake_nvcc(tmp_path / "cuda-12.8", "12.8", "12.8.93")
    env = {"CUDA_HOME": str(tmp_path / "cuda-12.8"), "PATH": os.environ.get("PATH", "")}
    info = probe.probe_nvcc(env)
    assert info is not None
    assert (info.path, info.version, info.release) == (str(nvcc), "12.8.93", "12.8")
    assert probe.nvcc_version(env) == "12.8.93"
    assert probe.nvcc_candidates(env)[0] == str(nvcc)


def test_nvcc_on_path_order(tmp_path: Path) -> None:
    nvcc = _fake_nvcc(tmp_path / "cuda", "13.0", "13.0.88")
    env = {"PATH": str(nvcc.parent)}
    assert probe.nvcc_candidates(env) == [str(nvcc), "/usr/local/cuda/bin/nvcc"]


@pytest.mark.skipif(shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"),
                    reason="no nvcc on this machine")
def test_real_nvcc() -> None:
    info = probe.probe_nvcc()
    assert info is not None and info.version is not None
    assert re.fullmatch(r"\d+\.\d+\.\d+", info.version)
    assert info.version.startswith(info.release + ".")
    out = subprocess.run([info.path, "--version"], capture_output=True, text=True).stdout
    assert f"V{info.version}" in out


def test_probe_all_is_json_and_timed(tmp_path: Path) -> None:
    report = probe.probe_all(environ={"HF_TOKEN": "hf_x", "NCCL_P2P_DISABLE": "1",
                                      "PATH": os.environ.get("PATH", "")})
    data = json.loads(json.dumps(report.to_json()))
    assert data["env"] == {"HF_TOKEN": "<redacted>", "NCCL_P2P_DISABLE": "1"}
    assert data["target"]["packages"]["torch"] == md.version("torch")
    assert set(data["timings_ms"]) == {"target", "host", "gpus", "nvcc", "env"}
    offline = probe.probe_all(site_packages=VENV_SITE, gpus=False)
    assert offline.target.source == "site-packages"
    assert offline.gpus.note == "GPU probe skipped"


@pytest.mark.network
def test_no_torch_or_flashinfer_imported(wheels, tmp_path: Path) -> None:
    """Importing every probe module and running every probe imports neither torch nor
    flashinfer, even with a real FlashInfer importable on the path."""
    site = wheels.site_packages(tmp_path / "site", FI_SG)
    code = textwrap.dedent(f"""
        import sys, json
        import dsparkctl.probe, dsparkctl.packages, dsparkctl.gpus, dsparkctl.envvars
        import dsparkctl.target_probe
        at_import = sorted(m for m in sys.modules if m.split('.')[0] in
                           ('torch', 'flashinfer', 'sglang', 'pynvml', 'psutil'))
        import importlib.util
        assert importlib.util.find_spec('flashinfer') is not None  # importable, yet untouched
        r = dsparkctl.probe.probe_all()
        r2 = dsparkctl.probe.probe_site_packages(__import__('pathlib').Path({str(site)!r}))
        assert r.target.packages['flashinfer-python'] == '0.6.15.post1', r.target.packages
        after = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'flashinfer', 'sglang'))
        print(json.dumps({{'at_import': at_import, 'after': after}}))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(site)]))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout.strip().splitlines()[-1])
    assert data == {"at_import": [], "after": []}


@pytest.mark.network
def test_shadowing_reported_alike_by_both_probes(wheels, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Two FlashInfers on the path (PYTHONPATH over the venv): both probes name the winner
    and both copies, the static reader and the target's own importlib.metadata alike."""
    first = wheels.site_packages(tmp_path / "a", [("flashinfer-python", "0.7.2.post1")])
    second = wheels.site_packages(tmp_path / "b", [("flashinfer-python", "0.6.15.post1")])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(first), str(second)]))
    other = probe.probe_python(sys.executable)
    assert other.packages["flashinfer-python"] == "0.7.2.post1"
    assert other.flashinfer_site() == first
    dup = other.duplicates["flashinfer-python"]
    assert [d.split(" ")[0] for d in dup] == ["0.7.2.post1", "0.6.15.post1"]
    static = probe._from_scan(packages.scan([first, second]), python=None, python_version=None,
                              source="site-packages")
    assert static.duplicates == other.duplicates


def test_probe_python_bare_name_found_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "python3.99").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(tmp_path))
    env = probe.probe_python("python3.99")
    # A link outside the venv is the base interpreter: found, run, and reported as itself.
    assert env.python == str(tmp_path / "python3.99")
    assert env.python_version == ".".join(map(str, sys.version_info[:3]))
    with pytest.raises(UsageError, match="no such file"):
        probe.probe_python("python3.98")
