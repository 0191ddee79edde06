#!/usr/bin/env bash
# Session 38, device call 2: the candidate -DDSPARKCTL_WS_DIMS_SPLIT=1 (an unsplit WS call whose grid
# fills at most half the SMs runs two CTAs per (token, head block), one per half of O's dims; see
# kernels/sparse_mla_plan.h) against the shipped v65, one call: bench/kernel_candidate_check.sh (GPU
# tests, outputs compared with v65's: half 0's lo pass now reads the e4m3 lo part, so not bit for bit
# there; memcheck, racecheck, the WS probe, the smoke; 3 alternating bench rounds), then both builds'
# phase timelines at DSpark T = 50, valid 133 and 128.
# Expect: DSpark T = 50 (the one bench row the rule moves) well below 16.6 us; every other row unchanged.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=$OUT NAME=dh FLAGS="-DDSPARKCTL_WS_DIMS_SPLIT=1" BASE=v65 ROUNDS=3 timeout 420 bash bench/kernel_candidate_check.sh
R=/tmp/tl; rm -rf $R; mkdir -p $R
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl_v65 > $R/build_v65.log 2>&1 &
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_WS_DIMS_SPLIT=1 bench/kernel_timeline.cu -o /tmp/tl_dh > $R/build_dh.log 2>&1 &
wait
for v in v65 dh; do
  : > $R/timeline_$v.jsonl
  for args in "64 192 133 0 50" "64 192 128 0 50"; do
    # shellcheck disable=SC2086
    timeout 40 /tmp/tl_$v $args >> $R/timeline_$v.jsonl 2>> $R/err_$v.log
  done
done
python3 bench/ws_timeline_summary.py --tiles v65=$R/timeline_v65.jsonl dh=$R/timeline_dh.jsonl > $R/tiles.txt 2>&1
cat $R/tiles.txt
(cd $R && tar czf "$OUT/tl.tgz" .)
