#!/usr/bin/env bash
# Session 44, device call 5 (~6 minutes): call 1's -DDSPARKCTL_WS_DH_COPY1=1 again (k1) and with session
# 41's lean Q conversion in the halves kernel (k1q: -DDSPARKCTL_WS_DH_Q_LEAN=1), against the shipped v70
# in one bench/kernel_abn.sh call (GPU tests on each, outputs against v70 bit for bit, 6 alternating
# rounds of the --short rows: DSpark T = 50 is the row on the halves kernel); then the prologue points
# and tile events of v70 and k1q at DSpark T = 50. No sanitizers (k1's ran in call 1). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
A=/tmp/abn; rm -rf $A; mkdir -p $A
KQ="-DDSPARKCTL_WS_DH_COPY1=1 -DDSPARKCTL_WS_DH_Q_LEAN=1"
{
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v70 $A/build_v70.log > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_k1 $A/build_k1.log -DDSPARKCTL_WS_DH_COPY1=1 > /dev/null &
  # shellcheck disable=SC2086
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_k1q $A/build_k1q.log $KQ > /dev/null &
  P=-DDSPARKCTL_TIMELINE' '-DDSPARKCTL_TL_EVENTS' '-DDSPARKCTL_TL_PROLOGUE
  # shellcheck disable=SC2086
  nvcc -O3 -std=c++17 -arch=sm_90a $P bench/kernel_timeline.cu -o /tmp/tl_v70 > $A/build_tl_v70.log 2>&1 &
  # shellcheck disable=SC2086
  nvcc -O3 -std=c++17 -arch=sm_90a $P $KQ bench/kernel_timeline.cu -o /tmp/tl_k1q > $A/build_tl_k1q.log 2>&1 &
  wait
}
BENCH_SETS='--short' OUT=$A ROUNDS=6 TESTS=1 COMPARE=1 PREBUILT=1 timeout 330 bash bench/kernel_abn.sh v70= k1=-DDSPARKCTL_WS_DH_COPY1=1 "k1q=${KQ// /,}" > $A/abn.log 2>&1
tail -28 $A/abn.log
for n in v70 k1q; do timeout 40 /tmp/tl_$n 64 192 133 0 50 > $A/timeline_$n.jsonl 2> $A/tl_err_$n.log; done
python3 bench/ws_timeline_summary.py --prologue v70=$A/timeline_v70.jsonl k1q=$A/timeline_k1q.jsonl
python3 bench/ws_timeline_summary.py --events v70=$A/timeline_v70.jsonl k1q=$A/timeline_k1q.jsonl > $A/events.txt 2>&1
grep -E " tile [0-2] |cta " $A/events.txt
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
