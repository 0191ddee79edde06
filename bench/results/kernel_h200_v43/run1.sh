#!/usr/bin/env bash
# Session 26, device call 3 (carry .dev/s30/kernel_peer): the full device run of v43 = v42 + the
# bulk L2 prefetch (rows spread 16 a warp) + the producer's id load after its use + pages of 2^k
# tokens by shift, now the default build (its SASS equals the A/B's pfblp build on sm_90a, the
# SM120-register build, sm_120a and sm_121a): every build of bench/kernel_device_run.sh (GPU tests,
# memcheck, racecheck on the WS rendezvous build, SM120-register build, the full bench with the
# Triton peer and the foreign predecessor), then v43's WS timelines.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl 2> $R/tl_build.log &  # CPU only, beside the GPU work
OUT=$R/full timeout 440 bash bench/kernel_device_run.sh .dev/s30/kernel_peer/flash_mla_sm120_triton.py --with-predecessor \
  > $R/full_run.log 2>&1
grep -vE "^\|" $R/full_run.log | tail -24
wait; [ -x /tmp/tl ] || echo "TL BUILD FAILED"
for sh in "64 192 133 512 50" "128 128 128 1024 64"; do timeout 20 /tmp/tl $sh >> $R/timeline_v43.jsonl; done
python3 bench/ws_timeline_summary.py v43=$R/timeline_v43.jsonl | tee $R/summary.txt
rm -f $R/full/*.so; cd $R && tar czf $OUT/r.tgz .
