"""Bit-for-bit comparison of two kernel builds on the same inputs.

A candidate whose arithmetic is claimed unchanged (a different launch shape, a different place for
the same sums: bench/results/kernel_h200_v41_candidates/) is checked here, not only against the
reference's tolerance:

    DSPARKCTL_KERNEL_SO=A.so python bench/compare_builds.py save A.pt
    DSPARKCTL_KERNEL_SO=B.so python bench/compare_builds.py save B.pt
    python bench/compare_builds.py compare A.pt B.pt    # exit 1 if any out / lse differs

The cases are the bench's DSpark and decode shapes under the automatic plan (one index set each).
The warp-specialized kernel is also forced at 2, 3 and 4 splits, with empty rows, padded heads and
no sink, so every path a split-cluster or combine change touches is compared.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_kernel import Caches, make_sets, shapes

from dsparkctl.kernel import ops


def cases(caches: Caches) -> list[tuple[str, dict, int, int]]:
    """(name, call arguments, config, splits): the bench shapes, then forced WS split counts."""
    out = []
    for i, shape in enumerate(shapes(quick=False)):
        s = make_sets(shape, caches, 1, seed=500 + i)[0]
        name = f"{shape['kind']} H={shape['H']} +{shape['extra']} T={shape['T']}"
        out.append((name, s, ops.CONFIG_AUTO, 0))
    forced = [
        {"kind": "decode", "H": 64, "topk": 192, "valid": 133, "extra": 512, "T": 12},
        {"kind": "decode", "H": 100, "topk": 320, "valid": 300, "extra": 256, "T": 6},
    ]
    for j, shape in enumerate(forced):
        for splits in (2, 3, 4):
            s = make_sets(shape, caches, 1, seed=900 + 10 * j + splits)[0]
            t = shape["T"]
            lengths = torch.full((t,), shape["valid"], device="cuda", dtype=torch.int32)
            lengths[0] = 0  # an empty main part
            s["topk_length"] = lengths
            s["extra_topk_length"][1] = 0
            s["extra_topk_length"][0] = 0  # row 0 empty: out 0, lse +inf
            if j == 1:
                s["attn_sink"] = None
            out.append((f"forced WS H={shape['H']} T={t} splits={splits}", s, ops.CONFIG_LARGE_SMEM_WS, splits))
    return out


def save(path: Path) -> int:
    ops.load()
    caches = Caches(main_tokens=1 << 16, extra_tokens=1 << 14)
    res = {}
    for name, s, config, splits in cases(caches):
        if config == ops.CONFIG_AUTO:
            o, lse = ops.sparse_mla_decode(sm_scale=512**-0.5, **s)
        else:
            o, lse = ops.sparse_mla_decode_cfg(sm_scale=512**-0.5, config=config, num_splits=splits, **s)
        res[name] = (o.cpu(), lse.cpu())
    torch.cuda.synchronize()
    torch.save(res, path)
    print(f"saved {len(res)} cases to {path}")
    return 0


def compare(a: Path, b: Path) -> int:
    ra, rb = torch.load(a), torch.load(b)
    if ra.keys() != rb.keys():
        print(f"different case sets: {sorted(set(ra) ^ set(rb))}")
        return 1
    bad = []
    for name in ra:
        (oa, la), (ob, lb) = ra[name], rb[name]
        same_o = torch.equal(oa.view(torch.int16), ob.view(torch.int16))
        same_l = torch.equal(la.view(torch.int32), lb.view(torch.int32))
        if not (same_o and same_l):
            diff = (oa.float() - ob.float()).abs().nan_to_num(0.0).max().item()
            bad.append(f"{name}: out {'equal' if same_o else f'differs (max |d| {diff:.3g})'}, lse {'equal' if same_l else 'differs'}")
    print(f"{len(ra) - len(bad)} of {len(ra)} cases bit for bit equal")
    for line in bad:
        print("  " + line)
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("save", help="run every case on the loaded build (DSPARKCTL_KERNEL_SO) and save out / lse")
    sp.add_argument("path", type=Path)
    cp = sub.add_parser("compare", help="compare two saved runs bit for bit")
    cp.add_argument("a", type=Path)
    cp.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.cmd == "save":
        if not torch.cuda.is_available():
            print("compare_builds: no CUDA device", file=sys.stderr)
            return 2
        return save(args.path)
    return compare(args.a, args.b)


if __name__ == "__main__":
    raise SystemExit(main())
