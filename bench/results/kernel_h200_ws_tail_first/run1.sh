#!/usr/bin/env bash
# Prepared in session 37 for the next device call (not yet run): the candidate -DDSPARKCTL_WS_TAIL_FIRST=1
# (the main cache's partial last tile first in its split; see the flag's comment in the kernel source)
# against the shipped v65, one call: bench/kernel_candidate_check.sh (GPU tests, outputs compared with
# v65's: NOT bit for bit by design, another softmax order, so read the listed differences against
# FlashMLA's tolerance, which the GPU tests assert; memcheck, racecheck, the WS probe, the smoke; 3
# alternating bench rounds), then both builds' phase timelines at DSpark T = 50, valid 133 and 128.
# Expect: DSpark T = 50 below v65's 16.6-16.7 us (the tail's ~2.1 us, see
# ../kernel_h200_v65_tail16/timeline/README.md); every other row unchanged (one more select a tile).
# ~4-5 minutes. Packs $OUT/r.tgz (candidate check) and $OUT/tl.tgz (timelines).
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=$OUT NAME=tf FLAGS="-DDSPARKCTL_WS_TAIL_FIRST=1" BASE=v65 ROUNDS=3 timeout 420 bash bench/kernel_candidate_check.sh
R=/tmp/tl; rm -rf $R; mkdir -p $R
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl_v65 > $R/build_v65.log 2>&1 &
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_WS_TAIL_FIRST=1 bench/kernel_timeline.cu -o /tmp/tl_tf > $R/build_tf.log 2>&1 &
wait
for v in v65 tf; do
  : > $R/timeline_$v.jsonl
  for args in "64 192 133 0 50" "64 192 128 0 50"; do
    # shellcheck disable=SC2086
    timeout 40 /tmp/tl_$v $args >> $R/timeline_$v.jsonl 2>> $R/err_$v.log
  done
done
python3 bench/ws_timeline_summary.py --tiles v65=$R/timeline_v65.jsonl tf=$R/timeline_tf.jsonl > $R/tiles.txt 2>&1
cat $R/tiles.txt
(cd $R && tar czf "$OUT/tl.tgz" .)
