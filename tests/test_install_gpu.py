"""GPU: `dsparkctl install-kernels` builds for this GPU, caches, routes a real SGLang tree, and
doctor then reports the routing as active and the formerly missing shapes as served.

Run on the H200 (`bench/gpu_suite.sh`); the sglang wheel comes from the test wheel cache.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu, pytest.mark.network]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsparkctl", *args], capture_output=True,
                          text=True, timeout=900)


def test_install_build_cache_route_and_doctor(tmp_path: Path, wheels) -> None:
    site = wheels.site_packages(tmp_path / "site", [("sglang", "0.5.23")], copy=True,
                                only=["sglang"])
    prefix = tmp_path / "prefix"
    t0 = time.monotonic()
    first = run("install-kernels", "--site-packages", str(site), "--prefix", str(prefix),
                "--json")
    t_first = time.monotonic() - t0
    assert first.returncode == 0, first.stdout + first.stderr
    doc = json.loads(first.stdout)
    manifest = Path(doc["build"]["manifest"])
    m = json.loads(manifest.read_text())
    major, minor = torch.cuda.get_device_capability()
    assert m["arch"] == f"sm_{major}{minor}a" and m["versions"]["torch"] == torch.__version__
    assert (manifest.parent / m["library"]).is_file()

    t0 = time.monotonic()
    second = run("install-kernels", "--site-packages", str(site), "--prefix", str(prefix),
                 "--json")
    t_second = time.monotonic() - t0
    assert second.returncode == 0, second.stdout + second.stderr
    doc2 = json.loads(second.stdout)
    assert doc2["build"]["built"] is False and doc2["build"]["installed"] is False
    assert "patch-unchanged" in {f["id"] for f in doc2["findings"]} or \
        any("no change" in f["title"] or "already" in f["title"] for f in doc2["findings"])
    print(f"\ninstall-kernels: first run {t_first:.1f} s, cached run {t_second:.1f} s")
    assert t_second < 30

    # judged against FlashInfer 0.6.15.post1's table: (64, 192) has no decode kernel there
    d = run("doctor", "--site-packages", str(site), "--tp", "2", "--gamma", "5",
            "--flashinfer-version", "0.6.15.post1", "--json")
    dd = json.loads(d.stdout)
    ids = {f["id"] for f in dd["findings"]}
    assert dd["routing"]["active"] is True, dd["routing"]
    assert "plan-routed-to-bundled" in ids and "plan-missing-kernel" not in ids

    rv = run("install-kernels", "--revert", "--site-packages", str(site), "--json")
    assert rv.returncode == 0, rv.stdout + rv.stderr
    assert not (site / "_dsparkctl_route.py").exists()
