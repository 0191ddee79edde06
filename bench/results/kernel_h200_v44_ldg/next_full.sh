#!/usr/bin/env bash
# PREPARED in session 26: the full device run of the winning candidate set (carry
# .dev/s30/kernel_peer; usage: bash next_full.sh -DDSPARKCTL_WS_LDG_RAW[,-DFLAG...]): every build of
# bench/kernel_device_run.sh with those flags (GPU tests, memcheck, racecheck on the WS rendezvous
# build and the probe, SM120-register build, the full bench with the Triton peer and the foreign
# predecessor), then its WS timelines. If it is clean, make the set the default in a CPU-only commit
# whose SASS equals this build's, function by function, on sm_90a, the SM120-register build,
# sm_120a and sm_121a (with the register loads: drop the 16-byte WS producer's copy path and
# warpgroup 1's copies), and take its table as bench/results/kernel_h200.md.
set -uo pipefail
FL=${1:?usage: bash next_full.sh -DFLAG[,-DFLAG...]}; FL=${FL//,/ }
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
# shellcheck disable=SC2086
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE $FL bench/kernel_timeline.cu -o /tmp/tl 2> $R/tl_build.log &
OUT=$R/full KERNEL_NVCC_EXTRA="$FL" timeout 440 bash bench/kernel_device_run.sh \
  .dev/s30/kernel_peer/flash_mla_sm120_triton.py --with-predecessor > $R/full_run.log 2>&1
grep -vE "^\|" $R/full_run.log | tail -24
wait; [ -x /tmp/tl ] || echo "TL BUILD FAILED"
for sh in "64 192 133 512 50" "128 128 128 1024 64"; do timeout 20 /tmp/tl $sh >> $R/timeline_cand.jsonl; done
python3 bench/ws_timeline_summary.py cand=$R/timeline_cand.jsonl | tee $R/summary.txt
rm -f $R/full/*.so; cd $R && tar czf $OUT/r.tgz .
