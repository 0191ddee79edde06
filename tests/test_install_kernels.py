"""install-kernels on CPU: arch resolution, dry runs, routing seen by doctor, revert.

The kernel itself cannot be built without a CUDA torch; tests/test_install_gpu.py builds it on
the H200. Here the manifest names a stand-in library file (a synthetic case: the hash check and
the routing decisions are what is under test, not the binary).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dsparkctl import install
from dsparkctl.errors import UsageError
from dsparkctl.patching import STATE_DIR
from dsparkctl.routing import PATCH_STATE_DIR


def _cuda_torch() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.version.cuda is not None


cpu_torch_only = pytest.mark.skipif(_cuda_torch(), reason="asserts what a CPU-only torch makes "
                                    "install-kernels say (CI's); this torch is a CUDA build")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsparkctl", *args], capture_output=True,
                          text=True, timeout=300)


def tree_hash(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.mark.parametrize(("text", "arch"), [("9.0", "sm_90a"), ("9.0a", "sm_90a"),
                                             ("sm_90a", "sm_90a"), ("12.0", "sm_120a"),
                                             ("120a", "sm_120a"), ("sm_121a", "sm_121a"),
                                             ("12.1", "sm_121a")])
def test_normalize_arch(text: str, arch: str) -> None:
    assert install.normalize_arch(text) == arch


@pytest.mark.parametrize("bad", ["8.0", "sm_75", "hopper", "13.0"])
def test_normalize_arch_rejects(bad: str) -> None:
    with pytest.raises(UsageError, match="ships for"):
        install.normalize_arch(bad)


def test_arch_from_gpus() -> None:
    assert install.arch_from_gpus(["12.0", "12.0"]) == "sm_120a"
    for ccs, msg in (([], "no NVIDIA GPU"), (["8.9"], "not one"), (["12.0", "9.0"], "several")):
        with pytest.raises(UsageError, match=msg):
            install.arch_from_gpus(ccs)


def test_build_key_tracks_every_input() -> None:
    t = install.TorchInfo("2.11.0+cu130", "13.0", ("/i",), ("/l",), True)
    base = install.build_key("src", "sm_120a", t)
    assert base == install.build_key("src", "sm_120a", t)
    others = {install.build_key("src2", "sm_120a", t), install.build_key("src", "sm_90a", t),
              install.build_key("src", "sm_120a", install.TorchInfo("2.12.0", "13.0", (), (), True)),
              install.build_key("src", "sm_120a", install.TorchInfo("2.11.0+cu130", "12.9", (), (), True)),
              # same torch version, other C++ ABI (a conda build against a PyPI one)
              install.build_key("src", "sm_120a", install.TorchInfo("2.11.0+cu130", "13.0", ("/i",),
                                                                    ("/l",), False)),
              # another CUDA toolkit's nvcc
              install.build_key("src", "sm_120a", t, "/usr/local/cuda-12.8/bin/nvcc")}
    assert base not in others and len(others) == 6


def _fake_build(calls: list[int], fail: BaseException | None = None):
    def build_extension(arch, out_dir, log_path, **_kw):
        calls.append(1)
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        Path(log_path).write_text("fake compiler output\n")
        if fail is not None:
            raise fail
        time.sleep(0.2)
        so = out_dir / f"dsparkctl_sparse_mla_{arch}.so"
        so.write_bytes(b"stand-in library " + arch.encode())
        return so
    return build_extension


def test_concurrent_installs_build_once_and_all_succeed(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranks of a cluster smoke on one node reach a cold cache together: one builds, the rest
    wait for it and reuse it; none fails, no temp folder is left."""
    from dsparkctl.kernel import build

    calls: list[int] = []
    monkeypatch.setenv("DSPARKCTL_BUILD_CACHE", str(tmp_path / "builds"))
    monkeypatch.setattr(build, "build_extension", _fake_build(calls))
    torch_info = install.TorchInfo("2.11.0+cu130", "13.0", (), (), True)
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda _i: install.build_and_install(
            "sm_120a", torch_info, tmp_path / "prefix"), range(6)))
    assert len(calls) == 1 and sum(r.built for r in results) == 1
    assert len({r.library for r in results}) == 1 and results[0].library.is_file()
    assert install.installed_intact(results[0].manifest)
    assert not [p for p in (tmp_path / "builds").iterdir() if ".tmp" in p.name]


@pytest.mark.parametrize("fail", [FileNotFoundError(2, "No such file", "c++"), KeyboardInterrupt()])
def test_a_build_that_dies_leaves_no_half_built_folder(tmp_path: Path, fail: BaseException,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from dsparkctl.kernel import build

    monkeypatch.setenv("DSPARKCTL_BUILD_CACHE", str(tmp_path / "builds"))
    monkeypatch.setattr(build, "build_extension", _fake_build([], fail))
    torch_info = install.TorchInfo("2.11.0+cu130", "13.0", (), (), True)
    with pytest.raises(UsageError if isinstance(fail, OSError) else KeyboardInterrupt):
        install.build_and_install("sm_120a", torch_info, tmp_path / "prefix")
    assert not [p for p in (tmp_path / "builds").iterdir() if ".tmp" in p.name]


def test_state_dir_constant_matches_engine() -> None:
    assert PATCH_STATE_DIR == STATE_DIR


@cpu_torch_only
def test_dry_run_without_gpu_explains_and_predicts_the_failure() -> None:
    """The dry run says what the real run would do; the real run stops without a GPU, so the
    dry run is not healthy (exit 1, a finding per reason) while still saying what it would do."""
    res = run("install-kernels", "--dry-run", "--json")
    assert res.returncode == 1, res.stderr
    doc = json.loads(res.stdout)
    errors = {f["id"]: f for f in doc["findings"] if f["severity"] == "error"}
    assert "install-no-arch" in errors and "--arch" in errors["install-no-arch"]["fix"]
    assert "the real run would stop here" in errors["install-no-arch"]["title"]
    assert any(f["id"] == "install-would-build" for f in doc["findings"])


@cpu_torch_only
def test_real_install_without_gpu_is_a_usage_error() -> None:
    res = run("install-kernels")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "--arch" in res.stderr


@pytest.fixture()
def sglang_site(tmp_path: Path, wheels) -> Path:
    return wheels.site_packages(tmp_path / "site", [("sglang", "0.5.17"),
                                                    ("flashinfer-python", "0.6.15.post1")],
                                copy=True, only=["sglang", "flashinfer"])


@cpu_torch_only
def test_dry_run_shows_the_diff_and_changes_nothing(sglang_site: Path) -> None:
    before = tree_hash(sglang_site)
    res = run("install-kernels", "--dry-run", "--arch", "12.0", "--site-packages", str(sglang_site))
    # this CPU-only torch cannot build the kernel: the real run would stop, so exit 1
    assert res.returncode == 1, res.stdout + res.stderr
    assert "the real run would stop here" in res.stdout and "CPU-only" in res.stdout
    assert "+++" in res.stdout and "_dsparkctl_route" in res.stdout
    assert tree_hash(sglang_site) == before


def _fake_install(tmp_path: Path) -> Path:
    lib = tmp_path / "prefix" / "k" / "dsparkctl_sparse_mla_sm_120a.so"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"stand-in library")
    manifest = lib.parent / install.MANIFEST
    manifest.write_text(json.dumps({"schema": 1, "arch": "sm_120a", "key": "k",
                                    "library": lib.name,
                                    "library_sha256": hashlib.sha256(lib.read_bytes()).hexdigest(),
                                    "files": [{"path": lib.name,
                                               "sha256": hashlib.sha256(lib.read_bytes()).hexdigest()}]}))
    return manifest


def doctor_ids(site: Path) -> tuple[int, set[str], dict]:
    res = run("doctor", "--site-packages", str(site), "--tp", "2", "--gamma", "5", "--json")
    doc = json.loads(res.stdout)
    return res.returncode, {f["id"] for f in doc["findings"]}, doc


def test_doctor_sees_routing_drift_and_revert(sglang_site: Path, tmp_path: Path) -> None:
    before = tree_hash(sglang_site)
    code, ids, _ = doctor_ids(sglang_site)
    assert code == 1 and "plan-missing-kernel" in ids

    manifest = _fake_install(tmp_path)
    res = run("patches", "apply", "--site-packages", str(sglang_site), "--kernel-manifest",
              str(manifest), "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    code, ids, doc = doctor_ids(sglang_site)
    assert "plan-routed-to-bundled" in ids and "plan-missing-kernel" not in ids, ids
    assert doc["routing"]["active"] is True and doc["routing"]["kernel"]["intact"] is True
    human = run("doctor", "--site-packages", str(sglang_site), "--tp", "2")
    assert "dsparkctl routing" in human.stdout and "sglang-route-sm120" in human.stdout
    assert "plan-routed-to-bundled" in human.stdout

    # the library changed under the manifest: the routed shapes would fail at start-up
    lib = manifest.parent / "dsparkctl_sparse_mla_sm_120a.so"
    lib.write_bytes(b"other bytes")
    code, ids, _ = doctor_ids(sglang_site)
    assert "routing-kernel-missing" in ids and "plan-missing-kernel" in ids and code == 1
    lib.write_bytes(b"stand-in library")

    # pip reinstalled sglang: the hook is gone
    hooked = sglang_site / "sglang/kernels/ops/attention/flash_mla_sm120.py"
    original = (Path(__import__("realwheels").unpacked("sglang", "0.5.17"))
                / "sglang/kernels/ops/attention/flash_mla_sm120.py").read_bytes()
    patched = hooked.read_bytes()
    hooked.write_bytes(original)
    code, ids, _ = doctor_ids(sglang_site)
    assert "routing-drift" in ids and "plan-missing-kernel" in ids and code == 1
    hooked.write_bytes(patched)

    res = run("install-kernels", "--revert", "--site-packages", str(sglang_site), "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    assert tree_hash(sglang_site) == before
    assert not (sglang_site / STATE_DIR).exists()


def test_router_records_flashinfer_and_doctor_sees_a_downgrade(tmp_path: Path, wheels) -> None:
    """Routing decided from FlashInfer 0.6.18's table does not route (64, 192); after a
    downgrade to 0.6.15.post1 that shape has no kernel at all: doctor must say so."""
    import shutil

    site = wheels.site_packages(tmp_path / "site", [("sglang", "0.5.17"),
                                                    ("flashinfer-python", "0.6.18")],
                                copy=True, only=["sglang", "flashinfer"])
    res = run("patches", "apply", "--site-packages", str(site), "--kernel-manifest",
              str(_fake_install(tmp_path)), "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    code, ids, doc = doctor_ids(site)
    assert code == 0 and doc["routing"]["active"], ids
    # 0.6.18 serves every shape; only its dual-cache prefill-sized calls are routed, for the
    # lanes it reads past topk_length (flashinfer #5095)
    routed = [c for c in doc["plan"]["calls"] if c["routed"]]
    assert routed and all(c["supported"] for c in routed)
    assert {(c["extra_topk"] > 0, min(int(n) for n in c["paths"]) > 64) for c in routed} == {
        (True, True)}
    assert {(c["phase"], c["extra_topk"]) for c in doc["plan"]["calls"]
            if c["extra_topk"] and min(int(n) for n in c["paths"]) > 64} == {
        (c["phase"], c["extra_topk"]) for c in routed}

    shutil.rmtree(site / "flashinfer")
    shutil.rmtree(site / "flashinfer_python-0.6.18.dist-info")
    wheels.site_packages(site, [("flashinfer-python", "0.6.15.post1")], copy=True,
                         only=["flashinfer"])
    code, ids, doc = doctor_ids(site)
    assert code == 1
    assert "routing-flashinfer-drift" in ids and "plan-missing-kernel" in ids, ids


def test_prefill_sized_draft_calls_flashinfer_rejects_are_routed_and_doctor_says_so(
        tmp_path: Path, wheels) -> None:
    """FlashInfer 0.6.15.post1 with DSpark at --cuda-graph-max-bs 32: draft calls of 70-160
    tokens reach the prefill dispatcher, which rejects topk 192. The router records that
    coverage at apply time, routes them, and doctor turns the error into an info."""
    site = wheels.site_packages(tmp_path / "site", [("sglang", "0.5.17"),
                                                    ("flashinfer-python", "0.6.15.post1")],
                                copy=True, only=["sglang", "flashinfer"])
    args = ("doctor", "--site-packages", str(site), "--tp", "2", "--gamma", "5",
            "--cuda-graph-max-bs", "32", "--json")
    res = run(*args)
    doc = json.loads(res.stdout)
    ids = {f["id"] for f in doc["findings"]}
    assert res.returncode == 1 and "plan-prefill-unsupported" in ids, ids
    fix = next(f["fix"] for f in doc["findings"] if f["id"] == "plan-prefill-unsupported")
    assert "dsparkctl install-kernels" in fix

    res = run("patches", "apply", "--site-packages", str(site), "--kernel-manifest",
              str(_fake_install(tmp_path)), "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    prefill = json.loads((site / "_dsparkctl_route.json").read_text())["flashinfer"]["prefill"]
    assert prefill["single_topks"] == [128, 512, 1024, 2048] and prefill["dual_topks"] == [128]
    res = run(*args)
    doc = json.loads(res.stdout)
    ids = {f["id"] for f in doc["findings"]}
    assert res.returncode == 0, ids
    assert "plan-prefill-routed-to-bundled" in ids and "plan-prefill-unsupported" not in ids
    rows = {(c["phase"], c["path"]): c["routed"] for c in doc["plan"]["calls"]
            if c["topk"] == 192}
    assert rows == {("draft", "assert"): True, ("draft", "error"): True}
    assert not [c for c in doc["plan"]["calls"] if c["routed"] and c["supported"]]
    human = run(*args[:-1])
    assert "routed" in human.stdout and "plan-prefill-routed-to-bundled" in human.stdout


def test_doctor_drops_the_0618_dual_prefill_pitfall_once_the_router_takes_those_calls(
        tmp_path: Path, wheels, monkeypatch) -> None:
    """On an SM120 box with FlashInfer 0.6.18 every dual-cache prompt > 64 tokens is corrupted
    (flashinfer #5095). Doctor warns; after install-kernels' routing the router's own rule sends
    every such planned call to the bundled kernel and the warning goes."""
    from dsparkctl import doctor, gpus

    site = wheels.site_packages(tmp_path / "site", [("sglang", "0.5.17"),
                                                    ("flashinfer-python", "0.6.18")],
                                copy=True, only=["sglang", "flashinfer"])
    sm120 = gpus.GpuReport(gpus=[gpus.GpuInfo(0, "NVIDIA RTX PRO 6000 Blackwell", "12.0",
                                              96 << 30, "580.0")])
    monkeypatch.setattr(gpus, "probe_gpus", lambda: sm120)
    opts = doctor.DoctorOptions(site_packages=site, tp=4, gamma=5, environ={})

    def pitfall_ids() -> set[str]:
        return {f.id for f in doctor.run_doctor(opts).findings}

    assert "flashinfer-0618-dual-prefill-corruption" in pitfall_ids()
    res = run("patches", "apply", "--site-packages", str(site), "--kernel-manifest",
              str(_fake_install(tmp_path)), "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    report = doctor.run_doctor(opts)
    assert "flashinfer-0618-dual-prefill-corruption" not in {f.id for f in report.findings}
    routed = [c for c in report.plan.calls if report.routed(
        c.num_heads, c.topk, 65, c.extra_topk, c.extra_page_size)]
    assert routed and all(c.extra_topk > 0 for c in routed)
    # the what-if table agrees: the installed release is no longer blocked by what is routed
    rows = {r["version"]: r for r in report.compat}
    assert rows["0.6.18"]["served"] is True and "blocked_by" not in rows["0.6.18"]

    # the server's DSPARKCTL_ROUTE wins over the settings, as in the router
    off = doctor.run_doctor(dataclasses.replace(opts, environ={"DSPARKCTL_ROUTE": "off"}))
    ids = {f.id for f in off.findings}
    assert "flashinfer-0618-dual-prefill-corruption" in ids and "routing-override" in ids
    assert off.routed is None
    bad = doctor.run_doctor(dataclasses.replace(opts, environ={"DSPARKCTL_ROUTE": "sometimes"}))
    assert "routing-override-invalid" in {f.id for f in bad.findings} and bad.verdict == "problems"


def test_doctor_sees_flashinfer_drift_under_route_all(tmp_path: Path, wheels) -> None:
    """--route all still decides prefill-sized calls from the recorded FlashInfer: a FlashInfer
    swapped after the apply is drift in that mode too."""
    import shutil

    site = wheels.site_packages(tmp_path / "site", [("sglang", "0.5.17"),
                                                    ("flashinfer-python", "0.7.0")],
                                copy=True, only=["sglang", "flashinfer"])
    res = run("patches", "apply", "--site-packages", str(site), "--route", "all",
              "--kernel-manifest", str(_fake_install(tmp_path)), "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    shutil.rmtree(site / "flashinfer")
    shutil.rmtree(site / "flashinfer_python-0.7.0.dist-info")
    wheels.site_packages(site, [("flashinfer-python", "0.6.15.post1")], copy=True,
                         only=["flashinfer"])
    res = run("doctor", "--site-packages", str(site), "--tp", "2", "--gamma", "5",
              "--cuda-graph-max-bs", "32", "--json")
    doc = json.loads(res.stdout)
    found = {f["id"]: f for f in doc["findings"]}
    assert res.returncode == 1 and "routing-flashinfer-drift" in found, sorted(found)
    assert "0.7.0" in found["routing-flashinfer-drift"]["title"]
    assert "--route all" not in found["routing-flashinfer-drift"]["fix"]


def test_smoke_and_install_share_one_build(tmp_path: Path, monkeypatch) -> None:
    """build_cached (smoke, tests) reuses install-kernels' cache and prefix: one compile."""
    from dsparkctl.kernel import build

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("DSPARKCTL_BUILD_CACHE", raising=False)
    compiles: list[str] = []

    def fake_build(arch, out_dir, log_path, **kw):  # stands in for nvcc: no CUDA here
        compiles.append(arch)
        out_dir.mkdir(parents=True, exist_ok=True)
        log_path.write_text("log\n")
        so = out_dir / f"{build.LIB_STEM}_{arch}.so"
        so.write_bytes(b"library for " + arch.encode())
        return so

    monkeypatch.setattr(build, "build_extension", fake_build)
    first = build.build_cached("sm_120a")
    again = build.build_cached("sm_120a")
    assert first == again and compiles == ["sm_120a"]
    assert first.parent.parent == install.default_prefix()
    manifest = first.parent / install.MANIFEST
    assert install.installed_intact(manifest)
    assert json.loads(manifest.read_text())["versions"]["torch"] == install.local_torch().version
