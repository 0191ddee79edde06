#!/usr/bin/env bash
# session 33 (device): bench/plan_sweep.py at 16 and 32 heads, now with the warp-specialized layout
# forced (large_ws: 64 rows a CTA, the rows past H padded). Its question: the 32-head decode chains
# run the 32-head LARGE tiles (v30's transposed wgmma); in one bench run (bench/results/kernel_h200.md)
# 32 heads +1024 T = 64 took 54.9 us on them and 64 heads +1024 T = 64 42.5 on the WS kernel, the same
# grid (64 tokens x 2 splits, 9-tile chains). Do padded WS CTAs beat the 32-head tiles, and from
# which chain length on?
set -uo pipefail
cd "$(dirname "$0")/../../.."
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kb $R/build.log > /dev/null || exit 1
export DSPARKCTL_KERNEL_SO=/tmp/kb/dsparkctl_sparse_mla_sm_90a.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/env.txt 2>&1
timeout 330 python3 bench/plan_sweep.py --kind decode --heads 32 16 --json $R/sweep_d16_32.json --md $R/sweep_d16_32.md 2>&1 | tail -14
(cd $R && tar czf $OUT/r.tgz .)
# Then the rule itself as a same-call A/B (the plan is host code: the kernels' SASS is the same in
# both builds): the default plan vs -DDSPARKCTL_PLAN_WS_PADDED_CHAIN=4 on the 16- and 32-head rows,
# 3 rounds. Set N from the sweep above before flipping the default.
( OUT=$R/abn ROUNDS=3 BENCH_SETS='--heads 16 32 --no-ref' timeout 300 bash bench/kernel_abn.sh base= ws4=-DDSPARKCTL_PLAN_WS_PADDED_CHAIN=4 ) > $R/abn.txt 2>&1
tail -22 $R/abn.txt
(cd $R && tar czf $OUT/r.tgz .)
