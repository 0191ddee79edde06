"""Cluster reports: merge per-rank (or per-node) reports and find skew.

Pure logic over the JSON form of per-rank reports, so that ``doctor
--cluster`` (gathered over torch.distributed) and ``report merge`` (files
gathered by any scheduler) produce the same findings from the same data.
The costly field failures are skew (one node on another FlashInfer or
driver) and broken links; a per-machine report shows neither.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dsparkctl.findings import Finding, Severity, envelope

# What must agree across ranks, how to read it off a rank report, and how bad a mismatch is.
# Package skew on the serving stack breaks the deployment; env skew is usually a mistake.
CRITICAL_PACKAGES = frozenset({
    "torch", "flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache", "sglang",
    "sglang-kernel", "sgl-kernel", "triton", "nvidia-cutlass-dsl", "apache-tvm-ffi",
})


# Launcher variables that differ by design from rank to rank (never skew).
PER_RANK_ENV = frozenset({
    "RANK", "LOCAL_RANK", "GROUP_RANK", "ROLE_RANK", "NODE_RANK", "SLURM_PROCID",
    "SLURM_LOCALID", "SLURM_NODEID", "CUDA_VISIBLE_DEVICES", "TORCHELASTIC_RUN_ID",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK",
})


@dataclass(frozen=True)
class SkewKey:
    id: str
    label: str
    severity: Severity
    read: Callable[[dict[str, Any]], Any]
    fix: str


def _gpu(rep: dict[str, Any]) -> dict[str, Any]:
    gl = rep.get("gpus") or []
    idx = rep.get("local_rank") or 0
    return gl[idx] if 0 <= idx < len(gl) else (gl[0] if gl else {})


SKEW_KEYS: tuple[SkewKey, ...] = (
    SkewKey("driver", "NVIDIA driver", Severity.ERROR,
            lambda r: _gpu(r).get("driver_version"),
            "Install the same NVIDIA driver on every node."),
    SkewKey("cuda-driver", "CUDA driver version", Severity.ERROR,
            lambda r: (r.get("gpu_topology") or {}).get("cuda_driver_version"),
            "Install the same NVIDIA driver on every node."),
    SkewKey("gpu-model", "GPU model", Severity.WARNING,
            lambda r: _gpu(r).get("name"),
            "Mixed GPU models in one TP group run at the slowest GPU's pace and may need "
            "different kernels; group like GPUs together."),
    SkewKey("compute-capability", "GPU compute capability", Severity.ERROR,
            lambda r: _gpu(r).get("compute_capability"),
            "Every rank of a deployment must run the same kernels: use one GPU architecture."),
    SkewKey("torch-cuda", "torch CUDA build", Severity.ERROR,
            lambda r: (r.get("target") or {}).get("torch_cuda"),
            "Install the same torch build (same +cuXXX) everywhere."),
)


def _values_by_rank(reports: Sequence[dict[str, Any]], read: Callable[[dict[str, Any]], Any]
                    ) -> dict[str, list[str]]:
    by_value: dict[str, list[str]] = defaultdict(list)
    for r in reports:
        by_value[str(read(r))].append(_who(r))
    return dict(by_value)


def _who(r: dict[str, Any]) -> str:
    return f"rank {r.get('rank', '?')} ({r.get('node', '?')})"


def _skew_finding(fid: str, label: str, sev: Severity, fix: str,
                  by_value: dict[str, list[str]]) -> Finding:
    detail = "\n".join(f"{v}: {', '.join(who)}" for v, who in sorted(by_value.items()))
    return Finding(f"cluster-skew-{fid}", sev, f"{label} differs across ranks", fix, (), detail,
                   {"values": by_value})


def skew_findings(reports: Sequence[dict[str, Any]]) -> list[Finding]:
    out: list[Finding] = []
    if len(reports) < 2:
        return out
    for key in SKEW_KEYS:
        by_value = _values_by_rank(reports, key.read)
        if len(by_value) > 1:
            out.append(_skew_finding(key.id, key.label, key.severity, key.fix, by_value))
    names = sorted({n for r in reports for n in (r.get("packages") or {})})
    for name in names:
        by_value = _values_by_rank(reports, lambda r, n=name: (r.get("packages") or {}).get(n))
        if len(by_value) > 1:
            sev = Severity.ERROR if name in CRITICAL_PACKAGES else Severity.WARNING
            out.append(_skew_finding(
                f"package-{name}", f"{name} version", sev,
                f"Install one {name} version on every node (pip install '{name}==<version>').",
                by_value))
    env_names = sorted({n for r in reports for n in (r.get("env") or {})} - PER_RANK_ENV)
    for name in env_names:
        by_value = _values_by_rank(reports, lambda r, n=name: (r.get("env") or {}).get(n))
        if len(by_value) > 1:
            out.append(_skew_finding(
                f"env-{name}", f"environment variable {name}", Severity.WARNING,
                f"Set {name} the same way on every node (launch scripts, Slurm --export).",
                by_value))
    return out


def _merge_rank_findings(reports: Sequence[dict[str, Any]]) -> list[Finding]:
    """Per-rank findings, once each, with the ranks they came from."""
    seen: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for r in reports:
        for f in r.get("findings") or []:
            key = f"{f['id']}|{f.get('title', '')}"
            seen.setdefault(key, (f, []))[1].append(_who(r))
    out = []
    for f, who in seen.values():
        fin = Finding.from_json(f)
        data = dict(fin.data)
        data["ranks"] = who
        out.append(Finding(fin.id, fin.severity, fin.title, fin.fix, fin.refs, fin.detail, data))
    return out


def nodes_of(reports: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    by_node: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in reports:
        by_node[str(r.get("node", "?"))].append(r)
    return dict(by_node)


def merge(reports: Sequence[dict[str, Any]], *, command: str = "doctor",
          extra_findings: Iterable[Finding] = (), **sections: Any) -> dict[str, Any]:
    """One cluster report: per-rank summary, per-node topology, skew and rank findings."""
    ranks = sorted(reports, key=lambda r: (int(r.get("rank", 0)), str(r.get("node", ""))))
    findings = [*_merge_rank_findings(ranks), *skew_findings(ranks), *extra_findings]
    rank_rows = [{
        "rank": r.get("rank"), "local_rank": r.get("local_rank"), "node": r.get("node"),
        "verdict": r.get("verdict"), "gpu": _gpu(r).get("name"),
        "compute_capability": _gpu(r).get("compute_capability"),
        "driver_version": _gpu(r).get("driver_version"),
        "packages": r.get("packages") or {},
        "findings": [f["id"] for f in r.get("findings") or []],
    } for r in ranks]
    nodes = {
        node: {
            "ranks": [r.get("rank") for r in rs],
            "topology": (rs[0].get("gpu_topology") or {}).get("topology"),
            "p2p": (rs[0].get("gpu_topology") or {}).get("p2p"),
        }
        for node, rs in nodes_of(ranks).items()
    }
    allreduce = [
        {"group": ar.get("group"), **row}
        for r in ranks
        for ar in [r.get("allreduce") or {}]
        if ar.get("group") and ar["group"][0] == r.get("rank")
        for row in ar.get("results") or []
    ]
    judged = all(r.get("verdict") != "unknown" for r in ranks) and bool(ranks)
    return envelope(command, findings, judged=judged, cluster=True, world_size=len(ranks),
                    ranks=rank_rows, nodes=nodes, allreduce=allreduce, **sections)
