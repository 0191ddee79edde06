#!/usr/bin/env bash
# PREPARED in session 26 for the next session's first device call (carry .dev/s30/kernel_peer): the
# register-load candidate (-DDSPARKCTL_WS_LDG_RAW: the WS producer loads each tile's rows from L2
# into its conversion registers one tile ahead; no bulk copies, no raw staging in shared memory),
# with and without v43's L2 prefetch, against v43. GPU tests and bit-for-bit compares on both,
# 3 alternating rounds of every short row and the 64/128-head rows, WS timelines (in this build the
# producer's "landed" is its wait for the tile's scale bytes, "buffer wait" its wait for a free
# buffer, "raw reads" 0), memcheck of ldg and racecheck of its rendezvous build (subset and probe).
# ~6 minutes. If ldg wins on the long rows without losing the short ones: next_full.sh.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R/abn; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
LDG=-DDSPARKCTL_WS_LDG_RAW
declare -A F=([v43]="" [ldg]="$LDG" [ldgnp]="$LDG -DDSPARKCTL_WS_L2_PREFETCH=0")
for n in v43 ldg ldgnp; do
  # shellcheck disable=SC2086
  timeout 300 python3 bench/build_kernel.py sm_90a /tmp/kabn_$n $R/abn/build_$n.log ${F[$n]} > /dev/null &
  # shellcheck disable=SC2086
  timeout 300 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE ${F[$n]} bench/kernel_timeline.cu -o /tmp/tl_$n 2> $R/tl_build_$n.log &
done
timeout 300 python3 bench/build_kernel.py sm_90a /tmp/kbuild_ldgrc $R/build_ldgrc.log $LDG -DDSPARKCTL_WS_RACECHECK_SYNC > /dev/null &
wait
OUT=$R/abn PREBUILT=1 TESTS=1 COMPARE=1 TEST_TIMEOUT=120 ROUNDS=3 timeout 420 bash bench/kernel_abn.sh v43= ldg=$LDG \
  ldgnp=$LDG,-DDSPARKCTL_WS_L2_PREFETCH=0 2>&1 | tee $R/abn.txt | grep -vE "^decode H=(16|32)"
for n in v43 ldg ldgnp; do
  for sh in "64 192 133 512 50" "64 192 133 0 50" "128 128 128 1024 64"; do timeout 20 /tmp/tl_$n $sh >> $R/timeline_$n.jsonl; done
done
python3 bench/ws_timeline_summary.py v43=$R/timeline_v43.jsonl ldg=$R/timeline_ldg.jsonl ldgnp=$R/timeline_ldgnp.jsonl | tee $R/summary.txt
SO=/tmp/kabn_ldg/dsparkctl_sparse_mla_sm_90a.so RC=/tmp/kbuild_ldgrc/dsparkctl_sparse_mla_sm_90a.so
{ echo "== memcheck (ldg)"; DSPARKCTL_KERNEL_SO=$SO timeout 120 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset or clustered_ctas" 2>&1 | tail -4
  echo "== racecheck (ldg rendezvous build)"; DSPARKCTL_KERNEL_SO=$RC timeout 120 compute-sanitizer --tool racecheck python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset and T2" 2>&1 | tail -4
  echo "== racecheck probe (ldg rendezvous build)"; DSPARKCTL_KERNEL_SO=$RC timeout 120 compute-sanitizer --tool racecheck python3 bench/racecheck_ws_probe.py > $R/racecheck_probe.log 2>&1; echo "$(grep -c '^ok' $R/racecheck_probe.log) launches ok | $(grep SUMMARY $R/racecheck_probe.log)"; } 2>&1 | tee $R/sanitizers.txt
rm -rf /tmp/kabn_* /tmp/kbuild_ldgrc $R/abn/*.pt; cd $R && tar czf $OUT/r.tgz .
