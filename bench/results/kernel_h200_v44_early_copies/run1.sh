#!/usr/bin/env bash
# Session 26, device call 6 (its last ~5 device minutes; no GPU tests, which the next session's
# full run would add): warpgroup 1 issues tile j + 2's rows 0-55 while its own P.V of tile j runs
# (-DDSPARKCTL_WS_EARLY_COPIES), with and without v43's L2 prefetch, against v43. Bit-for-bit
# compares, 2 alternating rounds of the 64/128-head set, WS timelines. Results written to $OUT as
# they come (a call cut at the device budget still returns them).
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R/abn; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
EC=-DDSPARKCTL_WS_EARLY_COPIES
declare -A F=([v43]="" [ec]="$EC" [ecnp]="$EC -DDSPARKCTL_WS_L2_PREFETCH=0")
for n in v43 ec ecnp; do
  # shellcheck disable=SC2086
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_$n $R/abn/build_$n.log ${F[$n]} > /dev/null &
  # shellcheck disable=SC2086
  timeout 200 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE ${F[$n]} bench/kernel_timeline.cu -o /tmp/tl_$n 2> $R/tl_build_$n.log &
done
wait
OUT=$R/abn PREBUILT=1 COMPARE=1 TEST_TIMEOUT=60 ROUNDS=2 BENCH_SETS='--short --heads 64 128' timeout 200 bash bench/kernel_abn.sh \
  v43= ec=$EC ecnp=$EC,-DDSPARKCTL_WS_L2_PREFETCH=0 2>&1 | tee $OUT/abn.txt | tail -30
for n in v43 ec ecnp; do
  for sh in "64 192 133 512 50" "128 128 128 1024 64"; do timeout 10 /tmp/tl_$n $sh >> $R/timeline_$n.jsonl; done
done
python3 bench/ws_timeline_summary.py v43=$R/timeline_v43.jsonl ec=$R/timeline_ec.jsonl ecnp=$R/timeline_ecnp.jsonl | tee $OUT/summary.txt
rm -rf /tmp/kabn_* $R/abn/*.pt; cp $OUT/abn.txt $OUT/summary.txt $R/ 2> /dev/null; cd $R && tar czf $OUT/r.tgz .
