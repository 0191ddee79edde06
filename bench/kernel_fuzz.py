"""A randomized differential campaign of the bundled kernel against the fp64 reference.

    python bench/kernel_fuzz.py --seed 0 --cases 3000 --json bench/results/kernel_fuzz_h200/fuzz.json

Seeds seed, seed + 1, ... each stand for one random call (``dsparkctl.kernel.fuzz.draw_case``:
shape, page sizes and strides, tensor layouts, bad indices and lengths, forced layout and split
count). Each runs twice and against the reference; a failure prints its case, and
``--seed N --cases 1`` reproduces it. ``--time-budget`` stops early (the cases run so far count).
Exit code: 0 every case passed, 1 some failed, 2 no GPU / bad arguments.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dsparkctl.kernel import fuzz


def _plan_key(plan: dict) -> str:
    tag = f"cfg{plan['config']} {plan['heads_per_cta']}h x {plan['tile_n']}"
    if plan.get("warp_specialized"):
        tag += " ws"
    if plan.get("dims_split", 1) > 1:
        tag += f" d{plan['dims_split']}"
    if plan.get("cluster", 1) > 1:
        tag += f" c{plan['cluster']}"
    return tag + (" split" if plan["num_splits"] > 1 else " unsplit")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    ap.add_argument("--cases", type=int, default=500, help="number of cases (default 500)")
    ap.add_argument("--seeds", help="comma-separated seeds instead of --seed / --cases")
    ap.add_argument("--time-budget", type=float, default=0.0, help="stop after this many seconds (0: none)")
    ap.add_argument("--json", help="write the campaign's record here")
    ap.add_argument("--explain", action="store_true",
                    help="per case: every layout's ratio, a torch fp32 reference's, the worst elements (diagnosis)")
    args = ap.parse_args()
    seeds = [int(x) for x in args.seeds.split(",")] if args.seeds else list(range(args.seed, args.seed + args.cases))
    if args.cases < 1 or not seeds:
        print("kernel_fuzz: --cases must be >= 1", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("kernel_fuzz: no CUDA device; run this on a GPU machine", file=sys.stderr)
        return 2
    from dsparkctl.kernel import ops

    so = ops.load()
    if args.explain:
        for seed in seeds:
            print(json.dumps(fuzz.explain_case(fuzz.draw_case(seed))), flush=True)
        return 0
    t0 = time.perf_counter()
    results = []
    for seed in seeds:
        case = fuzz.draw_case(seed)
        try:
            r = fuzz.run_case(case)
        except Exception:
            # a CUDA fault ends the process's context: name the case before the traceback
            print(f"ERROR {case.name}: {json.dumps(case.to_json())}", flush=True)
            raise
        if "plan" in r:
            r["plan"] = _plan_key(r["plan"])  # the case itself is its seed (draw_case)
        results.append(r)
        if not r["ok"]:
            print(f"FAIL {case.name}: {r['why']} {r.get('verdict')} ratio={r.get('ratio')} {r.get('detail')}", flush=True)
            print(f"     {json.dumps(case.to_json())}", flush=True)
        if len(results) % 250 == 0:
            print(f"{len(results)} cases, {time.perf_counter() - t0:.0f} s", flush=True)
        if args.time_budget and time.perf_counter() - t0 > args.time_budget:
            break
    ran = [r for r in results if "skipped" not in r]
    failed = [r for r in ran if not r["ok"]]
    ratios = sorted((r["ratio"] for r in ran if isinstance(r["ratio"], float)), reverse=True)
    verdicts = collections.Counter(r["verdict"] for r in ran)
    limited = [r for r in ran if r["verdict"] == "fp32-limited"]
    plans = collections.Counter(r["plan"] for r in ran)
    summary = {
        "schema_version": 1,
        "device": torch.cuda.get_device_name(),
        "capability": list(torch.cuda.get_device_capability()),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "library": str(so) if so else None,
        "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "seeds": [results[0]["seed"], results[-1]["seed"]] if results else [],
        "cases": len(results),
        "ran": len(ran),
        "skipped": len(results) - len(ran),
        "failed": len(failed),
        "failed_seeds": [r["seed"] for r in failed],
        "verdicts": dict(verdicts),
        "nondeterministic": sum("nondeterministic" in r["why"] for r in ran),
        "rows_alone_checked": sum(r.get("rows_alone_checked", 0) for r in ran),
        "rows_alone_other_kernel": sum(r.get("rows_alone_other_kernel", 0) for r in ran),
        "rows_alone_differ": sum(any(w.startswith("row ") for w in r["why"]) for r in ran),
        "graphs_checked": sum(bool(r.get("graph")) for r in ran),
        "graphs_differ": sum("graph replay differs from eager" in r["why"] for r in ran),
        "fp32_limited_seeds": [r["seed"] for r in limited][:200],
        "worst_excess": max((max(r["out_excess"], r["lse_excess"]) for r in limited), default=None),
        "lse_abs_err_near_zero_max": max((r["lse_abs_err_near_zero"] for r in ran), default=None),
        "worst_ratio": ratios[0] if ratios else None,
        "ratio_p50": ratios[len(ratios) // 2] if ratios else None,
        "empty_rows": sum(r["empty_rows"] or 0 for r in ran),
        "nan_rows": sum(r["nan_rows"] for r in ran),
        "plans": dict(sorted(plans.items())),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "plans"}, indent=1))
    print(f"plans hit: {len(plans)}")
    for k, n in sorted(plans.items()):
        print(f"  {n:6d}  {k}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"summary": summary, "results": results}, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
