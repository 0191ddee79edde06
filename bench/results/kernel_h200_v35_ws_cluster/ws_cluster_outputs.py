"""Save the outputs of the warp-specialized kernel (config 6, forced) at a few 128- / 100-head
cases to a file, with whichever kernel library DSPARKCTL_KERNEL_SO names: run once on a build
with v35's 2-CTA clusters and once on a -DDSPARKCTL_NO_WS_CLUSTER build, then `--compare A B`
checks that the two agree bit for bit (both convert every tile with the same tile maximum, and
the consumers' code is the same)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))
import test_kernel_gpu as g
import torch

from dsparkctl.kernel import ops

CASES = [
    (g.Case(t=4, h=128, topk=320, pbs=64, extra=(1024, 64), sink=True, seed=301), 1),
    (g.Case(t=4, h=100, topk=320, pbs=64, extra=(1024, 64), sink=True, seed=302), 3),
    (g.Case(t=64, h=128, topk=128, pbs=256, extra=(1024, 64), sink=False, seed=303), 1),
    (g.Case(t=8, h=128, topk=192, pbs=256, extra=(512, 64), sink=True, seed=304), 2),
]


def main() -> int:
    if sys.argv[1] == "--compare":
        a, b = torch.load(sys.argv[2]), torch.load(sys.argv[3])
        same = [bool(torch.equal(x, y)) for x, y in zip(a, b, strict=True)]
        print("bitwise equal per output:", same)
        return 0 if all(same) else 1
    ops.load()
    outs = []
    for case, splits in CASES:
        args = g._inputs(case)
        out, lse = ops.sparse_mla_decode_cfg(config=ops.CONFIG_LARGE_SMEM_WS, num_splits=splits, **args)
        g._check(args, out, lse)
        outs += [out.cpu(), lse.cpu()]
    torch.save(outs, sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
