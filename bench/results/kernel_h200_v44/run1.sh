#!/usr/bin/env bash
# Session 27, device call 3: v44's full device run (the committed default; the flag below only
# restates the default so next_full.sh's argument is non-empty), then the DSpark plan sweep on
# that build: with the cheaper combines, does any DSpark row now prefer more splits?
set -uo pipefail
bash bench/results/kernel_h200_v44_ldg/next_full.sh -DDSPARKCTL_COMBINE_WARP_ROWS=1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
DSPARKCTL_KERNEL_SO=/tmp/kbuild/dsparkctl_sparse_mla_sm_90a.so timeout 200 python3 bench/plan_sweep.py --kind dspark \
  --json /tmp/r/sweep_dspark.json --md /tmp/r/sweep_dspark.md 2>&1 | tail -3
cat /tmp/r/sweep_dspark.md
cd /tmp/r && tar czf "$OUT/r.tgz" .
