#!/usr/bin/env bash
# Session 26, device call 2 (carry .dev/s30/kernel_peer): the WS producer's prep shortened (the next
# tile's id load issued after this tile's id is used: -DDSPARKCTL_WS_ID_LATE; pages of 2^k tokens
# by shift: -DDSPARKCTL_POW2_PAGES, every kernel), alone and with each L2-prefetch form, against
# v42 and pfl (the by-line prefetch, ahead in call 1). GPU tests on the three new variants,
# bit-for-bit compares, 3 alternating rounds, WS timelines of all five.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R/abn; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
LP="-DDSPARKCTL_WS_ID_LATE -DDSPARKCTL_POW2_PAGES"
declare -A F=([v42]="" [pfl]="-DDSPARKCTL_WS_L2_PREFETCH=128" [lp]="$LP" [pfllp]="-DDSPARKCTL_WS_L2_PREFETCH=128 $LP" [pfblp]="-DDSPARKCTL_WS_L2_PREFETCH=1 $LP")
for n in v42 pfl lp pfllp pfblp; do
  # shellcheck disable=SC2086
  timeout 400 python3 bench/build_kernel.py sm_90a /tmp/kabn_$n $R/abn/build_$n.log ${F[$n]} > /dev/null &
  # shellcheck disable=SC2086
  timeout 400 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE ${F[$n]} bench/kernel_timeline.cu -o /tmp/tl_$n 2> $R/tl_build_$n.log &
done
wait
c() { echo "${F[$1]}" | tr ' ' ','; }
OUT=$R/abn PREBUILT=1 TESTS=1 COMPARE=1 TEST_TIMEOUT=120 ROUNDS=3 timeout 470 bash bench/kernel_abn.sh v42= pfl=$(c pfl) \
  lp=$(c lp) pfllp=$(c pfllp) pfblp=$(c pfblp) 2>&1 | tee $R/abn.txt | grep -vE "^decode H=(16|32)"
for n in v42 pfl lp pfllp pfblp; do
  for sh in "64 192 133 512 50" "128 128 128 1024 64"; do timeout 20 /tmp/tl_$n $sh >> $R/timeline_$n.jsonl; done
done
python3 bench/ws_timeline_summary.py v42=$R/timeline_v42.jsonl pfl=$R/timeline_pfl.jsonl lp=$R/timeline_lp.jsonl \
  pfllp=$R/timeline_pfllp.jsonl pfblp=$R/timeline_pfblp.jsonl | tee $R/summary.txt
rm -rf /tmp/kabn_* $R/abn/*.pt; cd $R && tar czf $OUT/r.tgz .
