#!/usr/bin/env bash
# Session 38, device call 3: v66's halves-of-O kernel with warpgroup 0 issuing the next tile's nope S
# ahead (-DDSPARKCTL_WS_DH_S_AHEAD=1: when that tile is ready, =2: always), against v66: GPU tests
# and outputs of both (bench/kernel_abn.sh, 4 alternating rounds of the DSpark and T = 1 rows: only
# DSpark T = 50 runs that kernel in the bench), then the three builds' phase timelines at DSpark
# T = 50, valid 133 and 128. ~4-5 minutes. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
A=/tmp/abn; rm -rf $A; mkdir -p $A; export PYTHONPATH=$PWD
for v in "v66:" "ah1:-DDSPARKCTL_WS_DH_S_AHEAD=1" "ah2:-DDSPARKCTL_WS_DH_S_AHEAD=2"; do
  n=${v%%:*}; f=${v#*:}
  # shellcheck disable=SC2086
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_$n $A/build_$n.log $f > /dev/null &
  # shellcheck disable=SC2086
  nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE $f bench/kernel_timeline.cu -o /tmp/tl_$n > $A/build_tl_$n.log 2>&1 &
done
wait
OUT=$A ROUNDS=4 TESTS=1 COMPARE=1 PREBUILT=1 BENCH_SETS='--short' timeout 400 bash bench/kernel_abn.sh v66= ah1=-DDSPARKCTL_WS_DH_S_AHEAD=1 ah2=-DDSPARKCTL_WS_DH_S_AHEAD=2 > $A/abn.log 2>&1
tail -16 $A/abn.log
for v in v66 ah1 ah2; do
  : > $A/timeline_$v.jsonl
  for args in "64 192 133 0 50" "64 192 128 0 50"; do
    # shellcheck disable=SC2086
    timeout 40 /tmp/tl_$v $args >> $A/timeline_$v.jsonl 2>> $A/tl_err_$v.log
  done
done
python3 bench/ws_timeline_summary.py --tiles v66=$A/timeline_v66.jsonl ah1=$A/timeline_ah1.jsonl ah2=$A/timeline_ah2.jsonl > $A/tiles.txt 2>&1
cat $A/tiles.txt
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
