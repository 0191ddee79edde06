"""Cluster mode on CPU: gloo on loopback, ranks spawned by the test, bounded time.

Each rank is a real `python -m dsparkctl doctor --cluster --json` process with
the launcher variables torchrun would set; the skew is real too (rank 1 reads a
site-packages with another FlashInfer wheel).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dsparkctl import cluster
from dsparkctl.distributed import FAULT_HANG_ENV, tp_groups
from dsparkctl.errors import UsageError

pytest.importorskip("torch")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(world: int, sites: list[Path], extra_env: dict[str, str] | None = None,
           timeout: float = 20) -> tuple[dict, float, list[subprocess.CompletedProcess]]:
    port = _free_port()
    procs = []
    t0 = time.monotonic()
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), CUDA_VISIBLE_DEVICES="",
                   **(extra_env or {}))
        cmd = [sys.executable, "-m", "dsparkctl", "doctor", "--cluster", "--json",
               "--timeout", str(timeout), "--site-packages", str(sites[rank % len(sites)]),
               "--tp", str(world)]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=timeout * 4 + 60)
        outs.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    elapsed = time.monotonic() - t0
    assert outs[0].stdout.strip(), outs[0].stderr[-3000:]
    return json.loads(outs[0].stdout), elapsed, outs


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory, wheels: object) -> list[Path]:
    root = tmp_path_factory.mktemp("cluster")
    a = wheels.site_packages(root / "a", [("flashinfer-python", "0.6.18"), ("sglang", "0.5.19")])
    b = wheels.site_packages(root / "b", [("flashinfer-python", "0.6.15.post1"), ("sglang", "0.5.19")])
    return [a, b]


@pytest.mark.parametrize("world", [2, 4])
def test_gathered_report_lists_every_rank(world: int, sites: list[Path]) -> None:
    doc, _, outs = _spawn(world, [sites[0]])
    assert doc["schema_version"] >= 1 and doc["cluster"] is True
    assert sorted(r["rank"] for r in doc["ranks"]) == list(range(world))
    assert all(not o.stdout.strip() for o in outs[1:]), "only rank 0 prints"
    rows = doc["allreduce"]
    assert rows and all(r["correct"] for r in rows)
    assert not [f for f in doc["findings"] if f["id"].startswith("cluster-skew")]


def test_injected_skew_is_reported(sites: list[Path]) -> None:
    doc, _, _ = _spawn(2, sites)
    skew = {f["id"]: f for f in doc["findings"]}
    f = skew["cluster-skew-package-flashinfer-python"]
    assert f["severity"] == "error"
    assert "0.6.18" in f["detail"] and "0.6.15.post1" in f["detail"]
    assert "rank 1" in f["detail"]


def test_injected_hang_becomes_a_finding_in_time(sites: list[Path]) -> None:
    doc, elapsed, _ = _spawn(2, [sites[0]], {FAULT_HANG_ENV: "1"}, timeout=5)
    ids = [f["id"] for f in doc["findings"]]
    assert "cluster-allreduce-hang" in ids
    assert doc["verdict"] == "problems"
    assert elapsed < 60, f"took {elapsed:.1f} s"


def test_report_merge_reproduces_skew(sites: list[Path], tmp_path: Path) -> None:
    files = []
    for i, site in enumerate(sites):
        res = subprocess.run([sys.executable, "-m", "dsparkctl", "doctor", "--json",
                              "--site-packages", str(site), "--tp", "2"],
                             capture_output=True, text=True, timeout=120)
        doc = json.loads(res.stdout)
        doc.setdefault("host", {})["hostname"] = f"node{i}"
        f = tmp_path / f"node{i}.json"
        f.write_text(json.dumps(doc))
        files.append(str(f))
    res = subprocess.run([sys.executable, "-m", "dsparkctl", "report", "merge", "--json", *files],
                         capture_output=True, text=True, timeout=120)
    merged = json.loads(res.stdout)
    ids = {f["id"] for f in merged["findings"]}
    assert "cluster-skew-package-flashinfer-python" in ids
    assert [r["node"] for r in merged["ranks"]] == ["node0", "node1"]
    assert res.returncode == 1


def test_merge_without_skew_and_tp_groups() -> None:
    rep = {"rank": 0, "node": "a", "packages": {"sglang": "0.5.19"}, "findings": [],
           "verdict": "healthy", "gpus": [], "env": {"NCCL_P2P_DISABLE": "1"}}
    doc = cluster.merge([rep, {**rep, "rank": 1}])
    assert doc["verdict"] == "healthy" and doc["world_size"] == 2
    env_skew = cluster.skew_findings([rep, {**rep, "rank": 1, "env": {}}])
    assert [f.id for f in env_skew] == ["cluster-skew-env-NCCL_P2P_DISABLE"]
    assert tp_groups(4, 2) == [[0, 1], [2, 3]]
    with pytest.raises(UsageError):
        tp_groups(4, 3)


def test_report_merge_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    res = subprocess.run([sys.executable, "-m", "dsparkctl", "report", "merge", str(bad),
                          str(tmp_path / "missing.json")], capture_output=True, text=True)
    assert res.returncode == 2
    assert "not a JSON report" in res.stderr and "Traceback" not in res.stderr


def _merge(*files: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsparkctl", "report", "merge", "--json",
                           *map(str, files)], capture_output=True, text=True, timeout=120)


def _minimal_report(**kw: object) -> dict:
    return {"schema_version": 1, "command": "doctor", "verdict": "healthy", "findings": [],
            "packages": {"sglang": "0.5.19"}, "gpus": [], "env": {}, **kw}


def test_doctor_reports_carry_the_hostname() -> None:
    res = subprocess.run([sys.executable, "-m", "dsparkctl", "doctor", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert json.loads(res.stdout)["host"]["hostname"] == socket.gethostname()


def test_report_merge_same_file_names_from_two_nodes_stay_two_nodes(tmp_path: Path) -> None:
    """Reports saved without a hostname, as node0/doctor.json and node1/doctor.json."""
    files = []
    for i in range(2):
        f = tmp_path / f"node{i}" / "doctor.json"
        f.parent.mkdir()
        f.write_text(json.dumps(_minimal_report(rank=i)))
        files.append(f)
    res = _merge(*files)
    doc = json.loads(res.stdout)
    assert sorted(doc["nodes"]) == ["node0/doctor", "node1/doctor"], doc["nodes"]


def test_report_merge_reads_utf16_from_powershell(tmp_path: Path) -> None:
    f = tmp_path / "r.json"
    f.write_bytes(json.dumps(_minimal_report()).encode("utf-16"))  # with its BOM
    res = _merge(f)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["world_size"] == 1


@pytest.mark.parametrize(("bad", "needle"), [
    (b"\xff\x00\xfe garbage", "not a JSON report"),
    (json.dumps(_minimal_report(rank=None)).encode(), "rank None"),
    (json.dumps(_minimal_report(rank="r0")).encode(), "rank 'r0'"),
    (json.dumps(_minimal_report(findings=[{"severity": "error"}])).encode(), "no id"),
    (json.dumps(_minimal_report(findings=[{"id": "x", "severity": "critical"}])).encode(),
     "severity 'critical'"),
    (json.dumps(_minimal_report(packages=["sglang"])).encode(), "packages is a list"),
    (json.dumps(_minimal_report(host="h")).encode(), "host is a str"),
])
def test_report_merge_malformed_report_is_one_line_exit_2(tmp_path: Path, bad: bytes,
                                                          needle: str) -> None:
    good, f = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(_minimal_report()))
    f.write_bytes(bad)
    res = _merge(good, f)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert needle in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    doc = json.loads(res.stdout)
    assert doc["verdict"] == "unknown" and needle in doc["error"]


class _SlowFirstCallsDist:
    """A one-rank ``dist`` whose first few all-reduces per tensor stall, as NCCL's lazy connect did."""

    def __init__(self, stall_s: float, stalled_calls: int) -> None:
        self.stall_s, self.stalled_calls, self.calls = stall_s, stalled_calls, 0
        self.per_tensor: dict[int, int] = {}

    def all_reduce(self, t: object, group: object = None) -> None:
        self.calls += 1
        n = self.per_tensor[id(t)] = self.per_tensor.get(id(t), 0) + 1
        if n <= self.stalled_calls:
            time.sleep(self.stall_s)


def test_allreduce_timing_excludes_the_lazy_connect() -> None:
    # 2 x H200 run: the first 4 KiB message read 37.8 ms (the connect), not its ~20 us.
    import torch

    from dsparkctl.distributed import allreduce_check

    fake = _SlowFirstCallsDist(0.2, stalled_calls=3)
    rows = allreduce_check(fake, torch, None, [0], 0, torch.device("cpu"), [4096, 65536],
                           iters=4, warmup=2, rounds=2)
    assert [r["bytes"] for r in rows] == [4096, 65536]
    assert all(r["correct"] for r in rows)
    assert all(r["time_us"] < 50_000 for r in rows), rows
    assert fake.calls == 2 * (1 + 2 + 2 * 4)


def test_cluster_report_shows_links_and_message_sizes() -> None:
    from rich.console import Console

    from dsparkctl.report import render_cluster

    topo = {"topology": [["X", "NV18"], ["NV18", "X"]], "p2p": [[None, True], [True, None]]}
    rep = {"rank": 0, "node": "n0", "packages": {}, "findings": [], "verdict": "healthy",
           "gpus": [], "env": {}, "gpu_topology": topo,
           "allreduce": {"group": [0, 1], "completed": True, "error": None,
                         "results": [{"bytes": 4096, "correct": True, "time_us": 27.2,
                                      "bus_bandwidth_gbps": 0.15},
                                     {"bytes": 256 << 20, "correct": True, "time_us": 894.0,
                                      "bus_bandwidth_gbps": 300.3}]}}
    doc = cluster.merge([rep, {**rep, "rank": 1}])
    console = Console(record=True, width=120)
    render_cluster(doc, console)
    text = console.export_text()
    assert "yes (NV18)" in text
    assert "256 MiB" in text and "4 KiB" in text and "300.30" in text


@pytest.mark.parametrize(("env", "needle"), [
    ({"RANK": "3", "WORLD_SIZE": "2"}, "do not fit WORLD_SIZE 2"),
    ({"RANK": "-1", "WORLD_SIZE": "2"}, "do not fit"),
    ({"RANK": "0", "WORLD_SIZE": "0"}, "do not fit"),
    ({"RANK": "0", "WORLD_SIZE": "1", "MASTER_PORT": "70000"}, "not a TCP port"),
])
def test_launcher_variables_checked_before_the_rendezvous(env: dict, needle: str) -> None:
    from dsparkctl.distributed import dist_env

    base = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    with pytest.raises(UsageError, match=needle):
        dist_env({**base, **env})


@pytest.mark.parametrize(("args", "needle"), [
    (("smoke", "--cluster", "--cluster-timeout", "0"), "timeout must be > 0"),
    (("smoke", "--cluster", "--cluster-timeout", "-1"), "timeout must be > 0"),
    (("smoke", "--cluster", "--tp", "3", "--cluster-timeout", "30"), "--tp 3 does not divide"),
    (("doctor", "--cluster", "--timeout", "30"), "do not fit WORLD_SIZE"),
])
def test_cluster_usage_errors_are_one_line_before_any_wait(args: tuple[str, ...],
                                                           needle: str) -> None:
    env = {**os.environ, "RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(_free_port())}
    if args[0] == "doctor":
        env["RANK"] = "3"
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "dsparkctl", *args, "--json"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert needle in json.loads(res.stdout)["error"]
    assert time.monotonic() - t0 < 25  # refused at once, not after the cluster timeout


def test_a_peer_that_never_joins_is_one_line_exit_2() -> None:
    env = {**os.environ, "RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(_free_port())}
    res = subprocess.run([sys.executable, "-m", "dsparkctl", "doctor", "--cluster", "--timeout",
                          "3", "--json"], capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "rendezvous" in json.loads(res.stdout)["error"]


def test_report_merge_same_hostname_different_gpus_are_two_nodes(tmp_path: Path) -> None:
    """Two machines both called localhost (different GPU UUIDs) stay two nodes; two ranks of
    one machine (same GPUs) stay one."""
    files = []
    for i, uuid in enumerate(("GPU-aaa", "GPU-bbb", "GPU-bbb")):
        f = tmp_path / f"r{i}" / "doctor.json"
        f.parent.mkdir()
        f.write_text(json.dumps(_minimal_report(rank=i, host={"hostname": "localhost"},
                                                gpus=[{"uuid": uuid, "name": "H200"}])))
        files.append(f)
    doc = json.loads(_merge(*files).stdout)
    assert sorted(doc["nodes"]) == ["localhost (r0/doctor)", "localhost (r1/doctor)"]
    assert doc["nodes"]["localhost (r1/doctor)"]["ranks"] == [1, 2]
