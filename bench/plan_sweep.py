"""Sweep the kernel's layout x split count per bench shape and compare with the automatic plan.

    python bench/plan_sweep.py --json OUT.json [--md OUT.md]

The automatic plan fills one wave of co-resident CTAs with splits. Each split writes fp32
partial rows (2 KB per head) that the combine reads back, so at DSpark verify sizes (T >= 10,
64 heads) the partials outweigh the gathered KV several times over; this sweep measures where
fewer, longer CTAs win. Same timing as bench_kernel.py (CUDA-graph replay over rotating index
sets), one line per (shape, layout, splits).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_kernel import Caches, call_bytes_flops, graph_time, make_sets

from dsparkctl.kernel import ops

LAYOUTS = {
    1: ("large", 64, 64),
    2: ("small", 32, 32),
    3: ("small16", 16, 32),
    4: ("large16", 16, 64),
    5: ("large32", 32, 64),
    6: ("large_ws", 64, 64),
    7: ("large_ws_dh", 64, 64),
}  # config: name, heads/CTA, tile (large_ws: the warp-specialized kernel, 64 rows padded below 64 heads;
#    large_ws_dh: that kernel with v66's two CTAs per row block, one per half of O's dims: unsplit,
#    or at any split count in a -DDSPARKCTL_WS_DIMS_PARTIALS=1 build; elsewhere large_ws's plan)
SPLITS = (1, 2, 3, 4, 5, 6, 8, 10, 11, 12, 13, 16, 20, 24, 33, 36)


def sweep_shapes() -> list[dict]:
    out = [
        {"kind": "dspark", "H": 64, "topk": 192, "valid": 133, "extra": e, "T": t}
        for e in (0, 512)
        for t in (5, 10, 25, 50)
    ]
    out += [
        {"kind": "decode", "H": h, "topk": 128, "valid": 128, "extra": e, "T": t}
        for h in (64, 128)
        for e in (512, 1024)
        for t in (1, 8)
    ]
    out += [{"kind": "decode", "H": 32, "topk": 128, "valid": 128, "extra": 512, "T": 8}]
    # session 33: the <= 32-head chains (LARGE32 / SMALL16 plans), against large_ws's padded rows
    out += [
        {"kind": "decode", "H": h, "topk": 128, "valid": 128, "extra": e, "T": t}
        for h in (16, 32)
        for e in (512, 1024)
        for t in (8, 32, 64)
        if (h, e, t) != (32, 512, 8)
    ]
    # v26's no-split condition away from the DSpark shapes: 128 CTAs of 32 heads, chains of 2
    out += [{"kind": "decode", "H": 64, "topk": 128, "valid": 128, "extra": 0, "T": 64}]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--json", type=Path, required=True)
    ap.add_argument("--md", type=Path)
    ap.add_argument("--replays", type=int, default=3)
    ap.add_argument(
        "--kind", choices=("dspark", "decode"), help="only the shapes of this kind (a shorter run)"
    )
    ap.add_argument(
        "--layout",
        choices=[name for name, _, _ in LAYOUTS.values()],
        help="force only this layout (a shorter run; e.g. one layout on two builds in one call)",
    )
    ap.add_argument("--heads", type=int, nargs="+", help="only the shapes of these head counts (a shorter run)")
    ap.add_argument("--T", type=int, nargs="+", dest="tokens", help="only the shapes of these token counts")
    ap.add_argument(
        "--valid",
        type=int,
        help="the DSpark shapes' valid length instead of 133 (1..192): the host plan cannot see it, so a plan "
        "fitted at 133 should be checked at the full topk too",
    )
    args = ap.parse_args()
    if args.valid is not None and not 1 <= args.valid <= 192:
        print(f"plan_sweep: --valid {args.valid}: the DSpark shapes' topk is 192; give 1..192", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("plan_sweep: no CUDA device", file=sys.stderr)
        return 2
    ops.load()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    caches = Caches(
        main_tokens=1 << 19, extra_tokens=1 << 18
    )  # as bench_kernel.py: gathers miss L2
    rows = []
    scale = 512**-0.5
    for i, shape in enumerate(sweep_shapes()):
        if (args.kind and shape["kind"] != args.kind) or (args.heads and shape["H"] not in args.heads):
            continue
        if args.tokens and shape["T"] not in args.tokens:
            continue
        if args.valid is not None and shape["kind"] == "dspark":
            shape = {**shape, "valid": args.valid}
        nbytes, _ = call_bytes_flops(shape, make_sets(shape, caches, 1, seed=10_000 + i)[0])
        sets = make_sets(shape, caches, int(min(32, max(4, math.ceil(240e6 / nbytes)))), seed=i)
        auto = (
            graph_time(lambda s: ops.sparse_mla_decode(sm_scale=scale, **s), sets, args.replays)
            * 1e6
        )
        rec = {**shape, "auto_us": round(auto, 2), "forced": []}
        for cfg, (name, heads, tile) in LAYOUTS.items():
            if (cfg == 3 and shape["H"] <= 16) or (cfg == 5 and shape["H"] <= 32):
                continue
            if cfg == 6 and shape["H"] > 32:  # the automatic "large" plan is this kernel there
                continue
            if args.layout and name != args.layout:
                continue
            tiles = -(-shape["topk"] // tile) + -(-shape["extra"] // tile)
            ctas = shape["T"] * -(-shape["H"] // heads) * (2 if cfg == 7 else 1)
            for sp in SPLITS:
                if sp > tiles or ctas * sp > 4 * sms:
                    continue
                us = (
                    graph_time(
                        lambda s, c=cfg, n=sp: ops.sparse_mla_decode_cfg(
                            sm_scale=scale, config=c, num_splits=n, **s
                        ),
                        sets,
                        args.replays,
                    )
                    * 1e6
                )
                rec["forced"].append(
                    {"layout": name, "splits": sp, "ctas": ctas * sp, "us": round(us, 2)}
                )
        if not rec["forced"]:  # --layout names a layout this shape skips (e.g. large32 at <= 32 heads)
            continue
        best = min(rec["forced"], key=lambda r: r["us"])
        rec["best"] = best
        rows.append(rec)
        print(
            json.dumps({k: rec[k] for k in ("kind", "H", "extra", "T", "auto_us", "best")}),
            flush=True,
        )
    meta = {
        "schema_version": 1,
        "device": torch.cuda.get_device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "python3 " + " ".join(sys.argv),
        "timing": "CUDA-graph replay, median of replays, per call; up to 32 rotating index sets",
    }
    args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    if args.md:
        lines = [
            f"# Layout x split sweep: {meta['device']}",
            "",
            f"- date: {meta['date']}",
            f"- command: `{meta['command']}`",
            "",
            "| kind | H | extra | T | auto us | best us | best layout | best splits | best CTAs |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            b = r["best"]
            lines.append(
                f"| {r['kind']} | {r['H']} | {r['extra']} | {r['T']} | {r['auto_us']} | {b['us']} | {b['layout']} | {b['splits']} | {b['ctas']} |"
            )
        args.md.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
