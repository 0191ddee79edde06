#!/usr/bin/env bash
# PREPARED in session 25: the full device run of the chosen L2-prefetch form (usage: bash
# next_full.sh N, N = 1 or 128; carry .dev/s30/kernel_peer): every build of
# bench/kernel_device_run.sh with -DDSPARKCTL_WS_L2_PREFETCH=N (GPU tests, memcheck, racecheck on
# the WS rendezvous build and the probe, SM120-register build, the full bench with the Triton peer
# and the foreign predecessor). If it is clean, make N the default in a CPU-only commit whose sm_90a
# SASS equals this build's, function by function, and take its table as bench/results/kernel_h200.md.
set -uo pipefail
N=${1:?usage: next_full.sh N}
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=$R/full KERNEL_NVCC_EXTRA=-DDSPARKCTL_WS_L2_PREFETCH=$N timeout 420 bash bench/kernel_device_run.sh \
  .dev/s30/kernel_peer/flash_mla_sm120_triton.py --with-predecessor > $R/full_run.log 2>&1
grep -vE "^\|" $R/full_run.log | tail -24
rm -f $R/full/*.so; cd $R && tar czf $OUT/r.tgz .
