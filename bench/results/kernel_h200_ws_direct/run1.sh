#!/usr/bin/env bash
# Prepared in session 39 for the next device call (not yet run): -DDSPARKCTL_WS_DIRECT=1 (the
# one-CTA WS kernel's warpgroups store their rows from registers: unsplit calls' bf16 rows with
# v67's quad transpose, split calls' fp32 partials as 8-byte pieces; the 2-split cluster combine
# keeps the staging; see the flag's comment in the kernel source) against the shipped v67:
# bench/kernel_candidate_check.sh (GPU tests, outputs against v67, which must be bit for bit;
# memcheck, racecheck, the WS probe, the smoke; 3 alternating rounds of the --short rows and of the
# 64- / 128-head rows, where 18 rows run the one-CTA WS kernel), then both builds' WS timelines at
# 128 heads +1024 T = 64 (unsplit) and 64 heads +1024 T = 32 (4 splits, partials).
# Expect: the WS rows' epilogue ("written - staged") shorter; every other row unchanged.
# ~5 minutes. Packs $OUT/r.tgz (candidate check) and $OUT/tl.tgz (timelines).
set -uo pipefail
cd "$(dirname "$0")/../../.."
R=/tmp/tl; rm -rf $R; mkdir -p $R
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl_v67 > $R/build_v67.log 2>&1 &
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_WS_DIRECT=1 bench/kernel_timeline.cu -o /tmp/tl_wd > $R/build_wd.log 2>&1 &
OUT=$OUT NAME=wd FLAGS="-DDSPARKCTL_WS_DIRECT=1" BASE=v67 ROUNDS=3 timeout 450 bash bench/kernel_candidate_check.sh
wait
for v in v67 wd; do
  : > $R/timeline_$v.jsonl
  for args in "128 128 128 1024 64" "64 128 128 1024 32"; do
    # shellcheck disable=SC2086
    timeout 40 /tmp/tl_$v $args >> $R/timeline_$v.jsonl 2>> $R/err_$v.log
  done
done
python3 bench/ws_timeline_summary.py --tiles v67=$R/timeline_v67.jsonl wd=$R/timeline_wd.jsonl > $R/tiles.txt 2>&1
cat $R/tiles.txt
(cd $R && tar czf "$OUT/tl.tgz" .)
