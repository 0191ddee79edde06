"""Profiling driver for the sparse-MLA kernel (run under ncu, or plain for split sweeps).

    python bench/kernel_profile.py sweep        # per-shape time vs forced split count / config
    ncu ... python bench/kernel_profile.py ncu [SHAPE ...]  # two launches per shape (default: big t1)

A per-kernel time split (main vs combine) of the bench's shapes:
    ncu --metrics gpu__time_duration.sum --csv python bench/kernel_profile.py ncu t1 t1h128 ds5x ds50 big
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dsparkctl.kernel import layout, ops

# (T, heads, topk, extra topk)
SHAPES = {"big": (64, 128, 128, 1024), "t1": (1, 64, 128, 512), "dspark": (50, 64, 133, 512),
          "t1h16": (1, 16, 128, 512), "t1h128": (1, 128, 128, 1024), "ds5": (5, 64, 133, 0),
          "ds5x": (5, 64, 133, 512), "ds50": (50, 64, 133, 0), "t1h128s": (1, 128, 128, 512),
          "ds10": (10, 64, 133, 0), "ds25": (25, 64, 133, 0)}


def inputs(t: int, h: int, topk: int, extra: int) -> dict:
    g = torch.Generator(device="cuda").manual_seed(0)
    main = layout.quantize_kv(torch.randn(1 << 17, 512, generator=g, device="cuda"), 256)
    ext = layout.quantize_kv(torch.randn(1 << 16, 512, generator=g, device="cuda"), 64)
    args = {
        "q": torch.randn(t, h, 512, generator=g, device="cuda").to(torch.bfloat16),
        "kv_cache": main,
        "indices": torch.randint(0, 1 << 17, (t, topk), generator=g, device="cuda", dtype=torch.int32),
    }
    if extra:
        args["extra_kv_cache"] = ext
        args["extra_indices"] = torch.randint(0, 1 << 16, (t, extra), generator=g, device="cuda",
                                              dtype=torch.int32)
    return args


def timed(fn, n: int = 50) -> float:
    for _ in range(3):
        fn()
    ts = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) * 1e3)
    return statistics.median(ts)


def main() -> None:
    ops.load()
    mode = sys.argv[1] if len(sys.argv) > 1 else "sweep"
    if mode == "ncu":
        for name in sys.argv[2:] or ("big", "t1"):
            a = inputs(*SHAPES[name])
            for _ in range(2):
                ops.sparse_mla_decode(**a)
        torch.cuda.synchronize()
        return
    for name, shp in SHAPES.items():
        a = inputs(*shp)
        for cfg in (1, 2):
            row = []
            for splits in (0, 1, 2, 4, 8, 16):
                us = timed(lambda a=a, cfg=cfg, splits=splits: ops.sparse_mla_decode_cfg(config=cfg, num_splits=splits, **a))
                row.append(f"s{splits}={us:.1f}")
            print(name, shp, "cfg", cfg, " ".join(row), flush=True)


if __name__ == "__main__":
    main()
