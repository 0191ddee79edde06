#!/usr/bin/env bash
# session 31 (device): bench/plan_sweep.py on v52 (the nope P lo pass; every layout x split count
# forced vs the automatic plan): the DSpark shapes, then the 64- and 128-head decode shapes. The lo
# pass adds ~41% to a tile's tensor work, so the splits and layouts v40's sweep chose may move.
# At 64 heads "large" is the warp-specialized kernel on Hopper.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kb $R/build.log > /dev/null || exit 1
export DSPARKCTL_KERNEL_SO=/tmp/kb/dsparkctl_sparse_mla_sm_90a.so
timeout 280 python3 bench/plan_sweep.py --kind dspark --json $R/sweep_dspark.json --md $R/sweep_dspark.md 2>&1 | tail -12
(cd $R && tar czf $OUT/r.tgz .)
timeout 200 python3 bench/plan_sweep.py --kind decode --heads 64 128 --json $R/sweep_d64_128.json --md $R/sweep_d64_128.md 2>&1 | tail -10
(cd $R && tar czf $OUT/r.tgz .)
