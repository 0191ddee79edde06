"""Issue 3's speed targets against what the accuracy contract leaves possible, row by row.

    python bench/target_bounds.py [BENCH_JSON] [--single-pass] [--json OUT.json] [--md OUT.md]

BENCH_JSON is a bench_kernel.py result (default: bench/results/kernel_h200.json, the shipped
kernel's table). Nothing is timed here: the script reads that run's measured times, its measured
bf16 matmul peak, and counts the tensor work every correct kernel must issue, so that an unmet
target can be told apart from an impossible one before another session is spent on it.

Why count issued work and not the issue's FLOPs: the issue's FLOP formula (2 * H * N * 1024 per
token) is the work of one bf16 pass over P. The accuracy contract (FlashMLA's reference tolerance)
is not met by one 11-bit pass over P on realistic data (kernels/NOTES.md, "The product's smoke on
v51"), so P.V runs as two passes (P's hi and lo parts): S over 512 dims plus 2 x 512 for P.V,
1,536 per candidate and head against the issue's 1,024 (1.5x; kernels/NOTES.md's WS tile count,
6,144 n-columns x k16-steps against 4,096). ``--single-pass`` counts one P.V pass instead: what
the targets would allow if the contract were relaxed to the reference kernel's precision.

Classes of an unmet target, from the row's budget (the target time) and its issued work W:
- ``beyond-peak``: W / measured bf16 peak > budget. No kernel that keeps the contract meets it on
  this GPU, even at 100% tensor use and zero latency.
- ``beyond-published-rate``: W at the best sustained rate published for this job (FlashMLA's
  Hopper sparse FP8 decode kernel, 410 TFLOP/s, one bf16 pass over P) exceeds the budget: the
  target asks for MMA issue beyond the reference kernel's, with nothing left for latency.
- ``within-bounds``: the tensor work fits the budget at the published rate; the gap is the
  kernel's schedule (the call's dependent chain of launch, lengths, ids, rows and conversion;
  partial stores and the combine; rows padded to the tile), not arithmetic.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

# Per candidate and head, in the bench's unit (FLOPs = 2 x dims): the issue's count, and what the
# kernel must issue under the contract. S = Q . K^T over the 512 head dims (448 nope + 64 rope),
# P.V over the 512 value dims in two passes (fp16 hi + lo for the nope dims, bf16 for the rope).
ISSUE_DIMS = 1024
S_DIMS = 512
PV_DIMS = 512
PV_PASSES = 2
CONTRACT_DIMS = S_DIMS + PV_PASSES * PV_DIMS  # 1,536
SINGLE_PASS_DIMS = S_DIMS + PV_DIMS  # 1,024: the issue's count
# FlashMLA README (https://github.com/deepseek-ai/FlashMLA, 2025.09.29): "410 TFlops during
# decoding" for the Hopper sparse FP8 decode kernel (H800 SXM5: the H200's SM count and bf16 rate).
PUBLISHED_TFLOPS = 410.0
DSPARK_BUDGET_US = 15.0
DECODE_T1_BUDGET_US = 10.0
ROOFLINE_FLOOR_US = 10.0  # the roofline target applies where the roofline exceeds this
ROOFLINE_SHARE = 0.5


@dataclass(frozen=True)
class Target:
    name: str
    budget_us: float


@dataclass(frozen=True)
class Verdict:
    shape: str
    plan: str
    target: str
    budget_us: float
    ours_us: float
    met: bool
    issued_gflop: float
    floor_peak_us: float
    floor_published_us: float
    ours_issued_tflops: float
    cls: str


def targets(row: dict) -> list[Target]:
    """The issue's targets that apply to one bench row (the >= 20x Triton target is the bench's
    own column and is not a matter of bounds)."""
    out = []
    if row["kind"] == "dspark" and row["T"] <= 64:
        out.append(Target("dspark <= 15 us", DSPARK_BUDGET_US))
    if row["kind"] == "decode" and row["T"] == 1:
        out.append(Target("T = 1 decode <= 10 us", DECODE_T1_BUDGET_US))
    if row["roofline_us"] > ROOFLINE_FLOOR_US:
        out.append(Target(">= 50% of roofline", row["roofline_us"] / ROOFLINE_SHARE))
    return out


def issued_flops(row: dict, dims: int = CONTRACT_DIMS) -> float:
    """The row's FLOPs rescaled from the issue's per-candidate count to ``dims``."""
    return float(row["flops"]) * dims / ISSUE_DIMS


def classify(budget_us: float, issued: float, peak_tflops: float) -> str:
    if issued / (peak_tflops * 1e12) * 1e6 > budget_us:
        return "beyond-peak"
    if issued / (PUBLISHED_TFLOPS * 1e12) * 1e6 > budget_us:
        return "beyond-published-rate"
    return "within-bounds"


def shape_label(row: dict) -> str:
    return f"{row['kind']} H={row['H']} topk={row['topk']}({row['valid']}) +{row['extra']} T={row['T']}"


def verdicts(bench: dict, dims: int = CONTRACT_DIMS) -> list[Verdict]:
    peak = float(bench["meta"]["bf16_matmul_tflops"])
    out = []
    for row in bench["rows"]:
        issued = issued_flops(row, dims)
        for tg in targets(row):
            ours = float(row["ours_us"])
            met = ours <= tg.budget_us
            out.append(Verdict(
                shape=shape_label(row), plan=row.get("plan") or "-", target=tg.name,
                budget_us=tg.budget_us, ours_us=ours, met=met, issued_gflop=issued / 1e9,
                floor_peak_us=issued / (peak * 1e12) * 1e6,
                floor_published_us=issued / (PUBLISHED_TFLOPS * 1e12) * 1e6,
                ours_issued_tflops=issued / (ours * 1e-6) / 1e12,
                cls="met" if met else classify(tg.budget_us, issued, peak)))
    return out


def render_md(bench: dict, vs: list[Verdict], source: str, dims: int = CONTRACT_DIMS) -> str:
    meta = bench["meta"]
    lines = [
        f"# Issue 3's speed targets against the contract's tensor work: {meta.get('device', '?')}",
        "",
        f"- source: `{source}` (bench date {meta.get('date', '?')}; `{meta.get('command', '?')}`)",
        f"- measured bf16 matmul peak {meta['bf16_matmul_tflops']:.0f} TFLOP/s; published sustained rate "
        f"{PUBLISHED_TFLOPS:.0f} TFLOP/s (FlashMLA, one bf16 P pass)",
        f"- issued work per candidate and head: {dims} x 2 FLOPs (S {S_DIMS} + P.V {PV_DIMS} x "
        f"{(dims - S_DIMS) // PV_DIMS} pass(es)) against the issue's {ISSUE_DIMS} x 2",
        "",
        "| shape | plan | target | budget us | ours us | floor @peak us | floor @published us | ours issued TFLOP/s | class |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for v in vs:
        lines.append(
            f"| {v.shape} | {v.plan} | {v.target} | {v.budget_us:.1f} | {v.ours_us:.1f} | {v.floor_peak_us:.1f} | "
            f"{v.floor_published_us:.1f} | {v.ours_issued_tflops:.0f} | {v.cls} |")
    counts: dict[str, int] = {}
    for v in vs:
        counts[v.cls] = counts.get(v.cls, 0) + 1
    lines += ["", "Counts: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench_json", nargs="?", default=str(Path(__file__).resolve().parent / "results" / "kernel_h200.json"))
    ap.add_argument("--single-pass", action="store_true", help="count one P.V pass (the relaxed contract)")
    ap.add_argument("--json", dest="json_out")
    ap.add_argument("--md", dest="md_out")
    args = ap.parse_args(argv)
    try:
        bench = json.loads(Path(args.bench_json).read_text())
        bench["meta"]["bf16_matmul_tflops"]
        bench["rows"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"target_bounds: {args.bench_json} is not a bench_kernel.py result ({e}); "
              "pass the --json file bench/bench_kernel.py wrote", file=sys.stderr)
        return 2
    dims = SINGLE_PASS_DIMS if args.single_pass else CONTRACT_DIMS
    vs = verdicts(bench, dims)
    doc = {"schema_version": 1, "source": args.bench_json, "device": bench["meta"].get("device"),
           "bf16_matmul_tflops": bench["meta"]["bf16_matmul_tflops"], "published_tflops": PUBLISHED_TFLOPS,
           "counted_dims": dims, "issue_dims": ISSUE_DIMS, "verdicts": [asdict(v) for v in vs]}
    text = json.dumps(doc, indent=1)
    if args.json_out:
        Path(args.json_out).write_text(text + "\n")
    else:
        print(text)
    if args.md_out:
        Path(args.md_out).write_text(render_md(bench, vs, args.bench_json, dims))
    return 0


if __name__ == "__main__":
    sys.exit(main())
