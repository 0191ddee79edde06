#!/usr/bin/env bash
# session 23 run 3 (device): bench/plan_sweep.py on the shipped v39 kernel (every layout x split count
# forced vs the automatic plan): the DSpark shapes, then the 128-head decode shapes. At 64 heads
# "large" is the warp-specialized kernel on Hopper (v37 rule).
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/kb'), Path('$R/build.log'))" > /dev/null || exit 1
export DSPARKCTL_KERNEL_SO=/tmp/kb/dsparkctl_sparse_mla_sm_90a.so
timeout 300 python3 bench/plan_sweep.py --kind dspark --json $R/sweep_dspark.json --md $R/sweep_dspark.md 2>&1 | tail -12
timeout 200 python3 bench/plan_sweep.py --kind decode --heads 128 --json $R/sweep_d128.json --md $R/sweep_d128.md 2>&1 | tail -6
cd $R && tar czf $OUT/r.tgz . && ls -la $OUT
