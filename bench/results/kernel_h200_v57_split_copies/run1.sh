#!/usr/bin/env bash
# session 32 (device): -DDSPARKCTL_WS_SPLIT_COPIES=1 against v53: tile j + 2's bulk copies issued
# half by warpgroup 1 and half by the producer (spc8: 8 rows a warp each; spc12: warpgroup 1 12,
# the producer 4). Built in parallel, GPU tests on both, outputs against v53 bit for bit, 3
# alternating rounds of --short and --short --heads 64 128, then per-tile timelines (warpgroup 1's
# P.V split into issue and wait, -DDSPARKCTL_TL_SPLIT_PV) of v53 and spc8.
set -uo pipefail
A=/tmp/abn; rm -rf $A; mkdir -p $A; export PYTHONPATH=$PWD
S8=-DDSPARKCTL_WS_SPLIT_COPIES=1; S12=-DDSPARKCTL_WS_SPLIT_LANE=12
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v53 $A/build_v53.log > /dev/null &
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_spc8 $A/build_spc8.log $S8 > /dev/null &
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_spc12 $A/build_spc12.log $S8 $S12 > /dev/null &
timeout 150 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_SPLIT_PV bench/kernel_timeline.cu -o /tmp/tl_v53 > $A/build_tl_v53.log 2>&1 &
timeout 150 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_SPLIT_PV $S8 bench/kernel_timeline.cu -o /tmp/tl_spc8 > $A/build_tl_spc8.log 2>&1 &
wait
OUT=$A ROUNDS=3 TESTS=1 COMPARE=1 PREBUILT=1 timeout 420 bash bench/kernel_abn.sh v53= spc8=$S8 spc12=$S8,$S12 > $A/abn.log 2>&1
tail -50 $A/abn.log
for v in v53 spc8; do
  : > $A/timeline_$v.jsonl
  for args in "64 192 133 0 50" "64 192 133 512 50" "64 128 128 1024 64" "128 128 128 1024 64"; do
    # shellcheck disable=SC2086
    timeout 60 /tmp/tl_$v $args >> $A/timeline_$v.jsonl 2>> $A/timeline_err.log
  done
done
python3 bench/ws_timeline_summary.py --tiles v53=$A/timeline_v53.jsonl spc8=$A/timeline_spc8.jsonl | tee $A/tiles.txt
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
