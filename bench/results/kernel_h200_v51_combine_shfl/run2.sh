#!/usr/bin/env bash
# Session 30, device call 4 (carry .dev/s30/kernel_peer):
#   bash bench/results/kernel_h200_v51_combine_shfl/run2.sh
# On top of -DDSPARKCTL_WS_COMBINE_SHFL=1 (run1: loop ~9,000 cycles with the peer's loads, ~2,850
# without): the peer's loads as plain asm the compiler may schedule (PEER_LOADS=1) or all 8 rows'
# issued first (PEER_LOADS=2). 1. their timeline marks, built in the background; 2. next_ab.sh
# shfl / free / first (GPU tests on free and first, bit for bit against shfl, 2 rounds, memcheck
# and racecheck of SAN); 3. the marks. r.tgz re-packed per stage.
set -uo pipefail
S=-DDSPARKCTL_WS_COMBINE_SHFL=1
M=/tmp/marks; rm -rf $M; mkdir -p $M
declare -A FL=([shfl]="$S" [free]="$S -DDSPARKCTL_WS_PEER_LOADS=1" [first]="$S -DDSPARKCTL_WS_PEER_LOADS=2")
for v in shfl free first; do
  # shellcheck disable=SC2086
  timeout 300 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_CLUSTER_MARKS ${FL[$v]} \
    bench/kernel_timeline.cu -o /tmp/tlm_$v > $M/build_$v.log 2>&1 &
done
ROUNDS=2 SAN=${SAN:-first} timeout 520 bash bench/results/kernel_h200_v44_ldg/next_ab.sh shfl=$S free=$S,-DDSPARKCTL_WS_PEER_LOADS=1 \
  first=$S,-DDSPARKCTL_WS_PEER_LOADS=2
wait
R=/tmp/r; mkdir -p $R/marks; cp $M/*.log $R/marks/
A=()
for v in shfl free first; do
  b=/tmp/tlm_$v; [ -x $b ] || { echo "MARKS BUILD FAILED $v"; continue; }
  for sh in "64 192 133 0 50" "64 192 133 0 50 1 2" "64 192 133 512 50" "128 128 128 1024 32" "64 128 128 512 64"; do
    timeout 20 $b $sh >> $R/marks/timeline_$v.jsonl || echo "TL FAILED $v $sh"
  done
  A+=("$v=$R/marks/timeline_$v.jsonl")
done
python3 bench/ws_timeline_summary.py --marks "${A[@]}" | tee $R/marks/marks.txt
cd $R && tar czf $OUT/r.tgz .
