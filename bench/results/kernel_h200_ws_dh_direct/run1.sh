#!/usr/bin/env bash
# Session 39, device call 7: -DDSPARKCTL_WS_DH_DIRECT=1 (an unsplit halves CTA's warpgroup 1 stores
# its bf16 rows from registers, no fp32 staging; see the flag's comment in the kernel source) against
# the shipped v66: bench/kernel_candidate_check.sh (GPU tests, outputs against v66, which must be bit
# for bit; memcheck, racecheck, the WS probe, the smoke; 4 alternating rounds of the --short rows,
# where only DSpark T = 50 runs the halves kernel), then both builds' WS timelines at DSpark T = 50
# (valid 133). ~4-5 minutes. Packs $OUT/r.tgz (candidate check) and $OUT/tl.tgz (timelines).
set -uo pipefail
cd "$(dirname "$0")/../../.."
R=/tmp/tl; rm -rf $R; mkdir -p $R
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl_v66 > $R/build_v66.log 2>&1 &
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_WS_DH_DIRECT=1 bench/kernel_timeline.cu -o /tmp/tl_dd > $R/build_dd.log 2>&1 &
BENCH_SETS='--short' OUT=$OUT NAME=dd FLAGS="-DDSPARKCTL_WS_DH_DIRECT=1" BASE=v66 ROUNDS=4 timeout 420 bash bench/kernel_candidate_check.sh
wait
for v in v66 dd; do
  timeout 40 /tmp/tl_$v 64 192 133 0 50 > $R/timeline_$v.jsonl 2>> $R/err_$v.log
done
python3 bench/ws_timeline_summary.py --tiles v66=$R/timeline_v66.jsonl dd=$R/timeline_dd.jsonl > $R/tiles.txt 2>&1
cat $R/tiles.txt
(cd $R && tar czf "$OUT/tl.tgz" .)
