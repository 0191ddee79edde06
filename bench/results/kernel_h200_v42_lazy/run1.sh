#!/usr/bin/env bash
# PREPARED in session 24 for the next session's first device call (carry .dev/s30/kernel_peer: SGLang
# 0.5.23's flash_mla_sm120_triton.py, from the wheel): the full device run of the lazy-rescale
# candidate (-DDSPARKCTL_WS_LAZY_RESCALE, off by default; ../kernel_h200_v42_candidates/ has its
# A/B): every build of bench/kernel_device_run.sh with the flag (GPU tests, memcheck, racecheck on the
# WS rendezvous build, SM120-register build, full bench with the Triton peer and the foreign
# predecessor), then 2 more same-call A/B rounds against v41. If the run is clean, flip the default
# in a CPU-only commit whose sm_90a SASS equals this build's, function by function.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=$R/full KERNEL_NVCC_EXTRA=-DDSPARKCTL_WS_LAZY_RESCALE timeout 330 bash bench/kernel_device_run.sh \
  .dev/s30/kernel_peer/flash_mla_sm120_triton.py --with-predecessor > $R/full_run.log 2>&1
grep -vE "^\|" $R/full_run.log | tail -24
OUT=$R/abn TESTS= ROUNDS=2 BENCH_SETS='--short --heads 64 128' timeout 200 bash bench/kernel_abn.sh v41= lazy=-DDSPARKCTL_WS_LAZY_RESCALE 2>&1 | tee $R/abn.txt | tail -16
rm -f $R/full/*.so; rm -rf /tmp/kabn_*; cd $R && tar czf $OUT/r.tgz .
