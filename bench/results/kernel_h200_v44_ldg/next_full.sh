#!/usr/bin/env bash
# PREPARED in session 26: the full device run of the register-load candidate (carry
# .dev/s30/kernel_peer): every build of bench/kernel_device_run.sh with -DDSPARKCTL_WS_LDG_RAW (GPU
# tests, memcheck, racecheck on the WS rendezvous build and the probe, SM120-register build, the
# full bench with the Triton peer and the foreign predecessor), then its WS timelines. If it is
# clean, make it the default in a CPU-only commit whose SASS equals this build's, function by
# function, on sm_90a, the SM120-register build, sm_120a and sm_121a (then drop the copy path of the
# 16-byte WS producer and warpgroup 1's copies), and take its table as bench/results/kernel_h200.md.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_WS_LDG_RAW bench/kernel_timeline.cu -o /tmp/tl 2> $R/tl_build.log &
OUT=$R/full KERNEL_NVCC_EXTRA=-DDSPARKCTL_WS_LDG_RAW timeout 440 bash bench/kernel_device_run.sh \
  .dev/s30/kernel_peer/flash_mla_sm120_triton.py --with-predecessor > $R/full_run.log 2>&1
grep -vE "^\|" $R/full_run.log | tail -24
wait; [ -x /tmp/tl ] || echo "TL BUILD FAILED"
for sh in "64 192 133 512 50" "128 128 128 1024 64"; do timeout 20 /tmp/tl $sh >> $R/timeline_ldg.jsonl; done
python3 bench/ws_timeline_summary.py ldg=$R/timeline_ldg.jsonl | tee $R/summary.txt
rm -f $R/full/*.so; cd $R && tar czf $OUT/r.tgz .
