#!/usr/bin/env bash
# Session 26, device call 4 (carry .dev/s30/kernel_peer): the WS kernel's 16-byte-path row copies
# as 16-byte cp.async by the copying warpgroup (-DDSPARKCTL_WS_CPASYNC_COPIES: 36 a row, the lanes
# of a warp over one row at a time, each thread arriving on rawbar when its copies land) instead of
# one bulk copy a row issued lane by lane; with and without v43's bulk L2 prefetch (whose lane-by-
# lane issue lengthens the producer's prep, which the faster copies may expose). GPU tests, bit-for-
# bit compares against v43, 3 alternating rounds, WS timelines; memcheck and racecheck (rendezvous
# build, subset and probe) of cpa.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R/abn; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
CPA=-DDSPARKCTL_WS_CPASYNC_COPIES
declare -A F=([v43]="" [cpa]="$CPA" [cpanp]="$CPA -DDSPARKCTL_WS_L2_PREFETCH=0")
for n in v43 cpa cpanp; do
  # shellcheck disable=SC2086
  timeout 400 python3 bench/build_kernel.py sm_90a /tmp/kabn_$n $R/abn/build_$n.log ${F[$n]} > /dev/null &
  # shellcheck disable=SC2086
  timeout 400 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE ${F[$n]} bench/kernel_timeline.cu -o /tmp/tl_$n 2> $R/tl_build_$n.log &
done
timeout 400 python3 bench/build_kernel.py sm_90a /tmp/kbuild_cparc $R/build_cparc.log $CPA -DDSPARKCTL_WS_RACECHECK_SYNC > /dev/null &
wait
OUT=$R/abn PREBUILT=1 TESTS=1 COMPARE=1 TEST_TIMEOUT=120 ROUNDS=3 timeout 400 bash bench/kernel_abn.sh v43= cpa=$CPA \
  cpanp=$CPA,-DDSPARKCTL_WS_L2_PREFETCH=0 2>&1 | tee $R/abn.txt | grep -vE "^decode H=(16|32)"
for n in v43 cpa cpanp; do
  for sh in "64 192 133 512 50" "128 128 128 1024 64"; do timeout 20 /tmp/tl_$n $sh >> $R/timeline_$n.jsonl; done
done
python3 bench/ws_timeline_summary.py v43=$R/timeline_v43.jsonl cpa=$R/timeline_cpa.jsonl cpanp=$R/timeline_cpanp.jsonl | tee $R/summary.txt
SO=/tmp/kabn_cpa/dsparkctl_sparse_mla_sm_90a.so RC=/tmp/kbuild_cparc/dsparkctl_sparse_mla_sm_90a.so
{ echo "== memcheck (cpa)"; DSPARKCTL_KERNEL_SO=$SO timeout 120 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset or clustered_ctas" 2>&1 | tail -4
  echo "== racecheck (cpa rendezvous build)"; DSPARKCTL_KERNEL_SO=$RC timeout 120 compute-sanitizer --tool racecheck python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset and T2" 2>&1 | tail -4
  echo "== racecheck probe (cpa rendezvous build)"; DSPARKCTL_KERNEL_SO=$RC timeout 120 compute-sanitizer --tool racecheck python3 bench/racecheck_ws_probe.py > $R/racecheck_probe.log 2>&1; echo "$(grep -c '^ok' $R/racecheck_probe.log) launches ok | $(grep SUMMARY $R/racecheck_probe.log)"; } 2>&1 | tee $R/sanitizers.txt
rm -rf /tmp/kabn_* /tmp/kbuild_cparc $R/abn/*.pt; cd $R && tar czf $OUT/r.tgz .
