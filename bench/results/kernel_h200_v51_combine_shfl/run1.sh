#!/usr/bin/env bash
# Session 30, device call 3 (carry .dev/s30/kernel_peer):
#   bash bench/results/kernel_h200_v51_combine_shfl/run1.sh
# -DDSPARKCTL_WS_COMBINE_SHFL=1 (the 2-split combine's row scalars once per row, by warp shuffle)
# against v50: 1. the timeline marks of both, with and without the peer's loads (probe 1), built
# in the background; 2. next_ab.sh (GPU tests on shfl, 46 bench cases bit for bit, 2 alternating
# rounds, WS timelines, memcheck and racecheck of shfl); 3. the marks. r.tgz re-packed per stage.
set -uo pipefail
FL=-DDSPARKCTL_WS_COMBINE_SHFL=1
M=/tmp/marks; rm -rf $M; mkdir -p $M
for v in v50 shfl; do for pr in 0 1; do
  f=""; [ $v = shfl ] && f=$FL
  # shellcheck disable=SC2086
  timeout 300 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_CLUSTER_MARKS -DDSPARKCTL_TL_COMBINE_PROBE=$pr $f \
    bench/kernel_timeline.cu -o /tmp/tlm_${v}_p$pr > $M/build_${v}_p$pr.log 2>&1 &
done; done
ROUNDS=2 SAN=shfl timeout 480 bash bench/results/kernel_h200_v44_ldg/next_ab.sh v50= shfl=$FL
wait
R=/tmp/r; mkdir -p $R/marks; cp $M/*.log $R/marks/
A=()
for v in v50 shfl; do for pr in 0 1; do
  b=/tmp/tlm_${v}_p$pr; [ -x $b ] || { echo "MARKS BUILD FAILED ${v}_p$pr"; continue; }
  for sh in "64 192 133 0 50" "64 192 133 0 50 1 2" "64 192 133 512 50" "128 128 128 1024 32" "64 128 128 512 64"; do
    timeout 20 $b $sh >> $R/marks/timeline_${v}_p$pr.jsonl || echo "TL FAILED ${v}_p$pr $sh"
  done
  A+=("${v}_p$pr=$R/marks/timeline_${v}_p$pr.jsonl")
done; done
python3 bench/ws_timeline_summary.py --marks "${A[@]}" | tee $R/marks/marks.txt
cd $R && tar czf $OUT/r.tgz .
