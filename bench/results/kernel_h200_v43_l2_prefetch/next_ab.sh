#!/usr/bin/env bash
# PREPARED in session 25 for the next session's first device call (carry .dev/s30/kernel_peer): the
# two kept L2-prefetch forms against v42 with enough rounds to decide. pfb (=1, bulk, 16 rows a
# warp) has had only a bit-for-bit compare so far; pfl (=128, by line) passed 353 tests. GPU tests
# on both, 3 alternating rounds of every short row and the 64/128-head decode rows, and the WS
# timeline of all three at DSpark +512 T = 50 and 128 heads +1024 T = 64. Pick the faster form
# (both if neither wins on the long rows: reject), then run next_full.sh N with it.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R/abn; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for v in v42: pfb:-DDSPARKCTL_WS_L2_PREFETCH=1 pfl:-DDSPARKCTL_WS_L2_PREFETCH=128; do
  n=${v%%:*}; f=${v#*:}
  python3 bench/build_kernel.py sm_90a /tmp/kabn_$n $R/abn/build_$n.log $f > /dev/null &
  nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE $f bench/kernel_timeline.cu -o /tmp/tl_$n 2> $R/tl_build_$n.log &
done
wait
OUT=$R/abn PREBUILT=1 TESTS=1 COMPARE=1 TEST_TIMEOUT=120 ROUNDS=3 timeout 420 bash bench/kernel_abn.sh v42= pfb=-DDSPARKCTL_WS_L2_PREFETCH=1 \
  pfl=-DDSPARKCTL_WS_L2_PREFETCH=128 2>&1 | tee $R/abn.txt | grep -vE "^decode H=(16|32)"
for v in v42 pfb pfl; do
  for sh in "64 192 133 512 50" "128 128 128 1024 64"; do timeout 20 /tmp/tl_$v $sh >> $R/timeline_$v.jsonl; done
done
python3 bench/ws_timeline_summary.py v42=$R/timeline_v42.jsonl pfb=$R/timeline_pfb.jsonl pfl=$R/timeline_pfl.jsonl | tee $R/summary.txt
rm -rf /tmp/kabn_* $R/abn/*.pt; cd $R && tar czf $OUT/r.tgz .
