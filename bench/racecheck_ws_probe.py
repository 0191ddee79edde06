"""Racecheck probe for the warp-specialized kernel (v32; was bench/results/kernel_h200_v32_ws_routed/
racecheck_ws.py): the sanitizer-subset cases with the kernel forced (config 6) at 1 and 2 splits,
one launch per (case, splits), synchronized and checked against the reference after each.
Run under `compute-sanitizer --tool racecheck` on a -DDSPARKCTL_WS_RACECHECK_SYNC build (v33: with
the shipped bar.arrive hand-off racecheck reports hazards the kernel does not have, see
bench/racecheck_ws_repro.cu); DSPARKCTL_KERNEL_SO picks the build, CASES / SPLITS env a subset."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import test_kernel_gpu as g
import torch

from dsparkctl.kernel import ops

ops.load()
cases = [
    g.Case(t=3, h=24, topk=100, pbs=64, extra=(40, 2), sink=True, seed=51),
    g.Case(t=1, h=128, topk=192, pbs=256, extra=(512, 64), sink=False, seed=52),
    g.Case(t=2, h=8, topk=33, pbs=3, extra=None, sink=True, seed=53, pad=0),
    g.Case(t=2, h=64, topk=256, pbs=64, extra=None, sink=False, seed=54),
]
pick = os.environ.get("CASES")
splits = [int(s) for s in os.environ.get("SPLITS", "1,2").split(",")]
for i, c in enumerate(cases):
    if pick and str(i) not in pick.split(","):
        continue
    args = g._inputs(c)
    for s in splits:
        out, lse = ops.sparse_mla_decode_cfg(config=ops.CONFIG_LARGE_SMEM_WS, num_splits=s, **args)
        torch.cuda.synchronize()
        g._check(args, out, lse)
        print("ok", c.name, "splits", s, flush=True)
