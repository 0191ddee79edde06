"""Cluster mode on torch.distributed: every rank probes, rank 0 gathers and judges.

Launched by torchrun or Slurm (``RANK``/``WORLD_SIZE``/``LOCAL_RANK``/
``MASTER_ADDR``/``MASTER_PORT``, or ``SLURM_PROCID``/``SLURM_NTASKS``/
``SLURM_LOCALID``). Two rules keep the tool from ever hanging with the
cluster it diagnoses:

- collectives under test run in a worker thread joined with a deadline; a
  collective that does not finish becomes a finding, not a stuck tool;
- reports travel through the rendezvous key-value store, not through a
  collective, so a rank whose NCCL is wedged still delivers its report, and
  rank 0 waits for each report with a deadline too.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from dsparkctl.errors import NoVerdictError, UsageError
from dsparkctl.findings import Finding, Severity

# SGLang's all-reduces: small decode activations up to large prefill chunks (bytes).
DEFAULT_SIZES = (4 * 1024, 64 * 1024, 1024 * 1024, 16 * 1024 * 1024)
# On GPUs one large message too: bus bandwidth only approaches the link's peak past ~100 MiB.
GPU_SIZES = (*DEFAULT_SIZES, 256 * 1024 * 1024)
# Test-only fault injection: this rank skips the all-reduce (a wedged peer).
FAULT_HANG_ENV = "DSPARKCTL_FAULT_HANG_ALLREDUCE_RANK"


@dataclass(frozen=True)
class DistEnv:
    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int


def dist_env(environ: dict[str, str] | None = None) -> DistEnv:
    """Read the launcher's variables; a missing one is a usage error, not a hang."""
    env = dict(os.environ if environ is None else environ)
    if "RANK" not in env and "SLURM_PROCID" in env:
        env.setdefault("RANK", env["SLURM_PROCID"])
        env.setdefault("WORLD_SIZE", env.get("SLURM_NTASKS", ""))
        env.setdefault("LOCAL_RANK", env.get("SLURM_LOCALID", "0"))
    missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if not env.get(k)]
    if missing:
        raise UsageError(
            f"--cluster needs a launcher: {', '.join(missing)} not set. Run under "
            "`torchrun --nproc-per-node N -m dsparkctl doctor --cluster` or srun with "
            "MASTER_ADDR/MASTER_PORT exported")
    try:
        de = DistEnv(int(env["RANK"]), int(env["WORLD_SIZE"]), int(env.get("LOCAL_RANK", "0")),
                     env["MASTER_ADDR"], int(env["MASTER_PORT"]))
    except ValueError as exc:
        raise UsageError(f"--cluster: malformed launcher variable ({exc})") from exc
    if de.world_size < 1 or not 0 <= de.rank < de.world_size or de.local_rank < 0:
        raise UsageError(f"--cluster: RANK {de.rank} / LOCAL_RANK {de.local_rank} do not fit "
                         f"WORLD_SIZE {de.world_size} (ranks run 0..WORLD_SIZE-1); check the "
                         f"launcher's variables")
    if not 0 < de.master_port < 65536:
        raise UsageError(f"--cluster: MASTER_PORT {de.master_port} is not a TCP port")
    return de


def tp_groups(world_size: int, tp: int) -> list[list[int]]:
    """Consecutive ranks form a TP group, as SGLang lays them out."""
    if tp < 1 or world_size % tp:
        raise UsageError(f"--tp {tp} does not divide the world size {world_size}")
    return [list(range(s, s + tp)) for s in range(0, world_size, tp)]


def _run_with_deadline(fn: Callable[[], Any], timeout_s: float) -> tuple[bool, Any]:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        return False, None
    if "error" in box:
        raise box["error"]
    return True, box.get("value")


def allreduce_check(dist: Any, torch: Any, group: Any, group_ranks: Sequence[int], rank: int,
                    device: Any, sizes: Sequence[int], iters: int, warmup: int = 3,
                    rounds: int = 3) -> list[dict[str, Any]]:
    """Correctness of the sum and bus bandwidth per message size for one TP group."""
    n = len(group_ranks)
    expected = float(sum(r + 1 for r in group_ranks))
    rows = []
    for nbytes in sizes:
        numel = max(1, nbytes // 4)
        t = torch.full((numel,), float(rank + 1), dtype=torch.float32, device=device)
        dist.all_reduce(t, group=group)
        ok = bool(torch.all(t == expected).item())
        sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
        # NCCL connects each algorithm/protocol lazily on its first use (tens of ms on the
        # first small message of a 2 x H200 run): warm up, then keep the best of a few rounds.
        for _ in range(warmup):
            dist.all_reduce(t, group=group)
        sync()
        dt = float("inf")
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(t, group=group)
            sync()
            dt = min(dt, (time.perf_counter() - t0) / iters)
        busbw = (numel * 4) * 2 * (n - 1) / n / dt if n > 1 and dt > 0 else None
        rows.append({"bytes": numel * 4, "correct": ok, "time_us": dt * 1e6,
                     "bus_bandwidth_gbps": busbw / 1e9 if busbw else None})
    return rows


def run_cluster(
    local_report: Callable[[DistEnv], dict[str, Any]],
    *, tp: int | None = None, timeout_s: float = 60.0, sizes: Sequence[int] | None = None,
    iters: int = 5, backend: str | None = None, environ: dict[str, str] | None = None,
    collectives: bool = True,
) -> tuple[DistEnv, list[dict[str, Any]] | None, list[Finding]]:
    """Run on every rank; rank 0 gets every report (or a finding for each one that never came)."""
    # Everything that can be judged alone is judged before the rendezvous, where a mistake
    # would otherwise surface as a torch traceback after the whole timeout.
    if not 0 < timeout_s <= 86400:
        raise UsageError(f"--cluster timeout must be > 0 and <= 86400 seconds, got {timeout_s:g}")
    de = dist_env(environ)
    groups = tp_groups(de.world_size, tp or de.world_size)
    import torch
    import torch.distributed as dist

    use_cuda = torch.cuda.is_available() and backend != "gloo"
    if use_cuda:
        torch.cuda.set_device(de.local_rank % torch.cuda.device_count())
    device = torch.device("cuda", torch.cuda.current_device()) if use_cuda else torch.device("cpu")
    backend = backend or ("nccl" if use_cuda else "gloo")
    if sizes is None:
        sizes = GPU_SIZES if use_cuda else DEFAULT_SIZES
    try:
        dist.init_process_group(backend, rank=de.rank, world_size=de.world_size,
                                timeout=timedelta(seconds=timeout_s))
    except (RuntimeError, ValueError, OSError) as exc:  # DistStoreError / DistNetworkError too
        raise NoVerdictError(
            f"--cluster: the rendezvous at {de.master_addr}:{de.master_port} failed for rank "
            f"{de.rank} of {de.world_size} ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
            f"check that every rank started and can reach MASTER_ADDR:MASTER_PORT") from None
    store = dist.distributed_c10d._get_default_store()

    report = local_report(de)
    report.update(rank=de.rank, local_rank=de.local_rank, world_size=de.world_size,
                  node=socket.gethostname(), backend=backend)

    pgs = [dist.new_group(g) for g in groups]  # every rank must create every group
    mine = next(i for i, g in enumerate(groups) if de.rank in g)
    hang_rank = os.environ.get(FAULT_HANG_ENV)
    error = None
    if not collectives:
        done, rows = True, None
    elif hang_rank is not None and int(hang_rank) == de.rank:
        done, rows = False, None  # fault injection: behave as a wedged peer
        time.sleep(timeout_s + 1)
    else:
        try:
            done, rows = _run_with_deadline(
                lambda: allreduce_check(dist, torch, pgs[mine], groups[mine], de.rank, device,
                                        sizes, iters), timeout_s)
        except Exception as exc:  # the backend's own timeout fired first
            done, rows, error = False, None, f"{type(exc).__name__}: {exc}"[:500]
    if collectives:
        report["allreduce"] = {"group": groups[mine], "completed": done, "results": rows or [],
                               "error": error}

    store.set(f"dsparkctl/report/{de.rank}", json.dumps(report, default=str))
    if de.rank != 0:
        return de, None, []

    reports, findings = [report], []
    deadline = time.monotonic() + timeout_s
    for r in range(1, de.world_size):
        key = f"dsparkctl/report/{r}"
        try:
            store.wait([key], timedelta(seconds=max(1.0, deadline - time.monotonic())))
            reports.append(json.loads(store.get(key)))
        except Exception:
            findings.append(Finding(
                "cluster-rank-missing", Severity.ERROR,
                f"rank {r} sent no report within {timeout_s:.0f} s",
                "Check that rank's logs; a rank stuck in NCCL init usually means a broken "
                "P2P path (export NCCL_P2P_DISABLE=1 on PCIe-only boxes).",
                data={"rank": r}))
    findings.extend(allreduce_findings(reports, timeout_s))
    return de, reports, findings


def allreduce_findings(reports: Sequence[dict[str, Any]], timeout_s: float) -> list[Finding]:
    out = []
    for rep in reports:
        ar = rep.get("allreduce") or {}
        who = f"rank {rep.get('rank')} ({rep.get('node')}), TP group {ar.get('group')}"
        if not ar.get("completed", True):
            out.append(Finding(
                "cluster-allreduce-hang", Severity.ERROR,
                f"all-reduce did not finish within {timeout_s:.0f} s on {who}",
                "On PCIe-only boxes (topology PHB/SYS) export NCCL_P2P_DISABLE=1 and serve with "
                "--disable-custom-all-reduce; check `nvidia-smi topo -m` and the IOMMU/ACS settings.",
                detail=ar.get("error") or "", data={"rank": rep.get("rank")}))
        elif any(not row.get("correct") for row in ar.get("results", [])):
            out.append(Finding(
                "cluster-allreduce-wrong", Severity.ERROR, f"all-reduce returned a wrong sum on {who}",
                "Silent data corruption over the interconnect: export NCCL_P2P_DISABLE=1 and "
                "re-run; if it persists, take the GPU or link out of service.",
                data={"rank": rep.get("rank")}))
    return out
