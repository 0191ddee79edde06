#!/usr/bin/env bash
# PREPARED in session 26 for the next session's device calls (carry .dev/s30/kernel_peer):
#   bash next_ab.sh v43= ldg=-DDSPARKCTL_WS_LDG_RAW ldgnp=-DDSPARKCTL_WS_LDG_RAW,-DDSPARKCTL_WS_L2_PREFETCH=0
#   bash next_ab.sh v43= spec=-DDSPARKCTL_WS_SPEC_IDS ldgspec=-DDSPARKCTL_WS_LDG_RAW,-DDSPARKCTL_WS_SPEC_IDS
# (variants as bench/kernel_abn.sh takes them, the first the baseline; SAN=NAME picks the variant
# to sanitize, default the second). Builds every variant and its timeline binary in parallel, then
# GPU tests and bit-for-bit compares of the candidates, 3 alternating rounds of every short row and
# the 64/128-head rows, WS timelines (in a register-load build the producer's "landed" is its wait
# for the tile's scale bytes, "buffer wait" its wait for a free buffer, "raw reads" 0), memcheck of
# SAN and racecheck of its rendezvous build (subset and probe). ~6-7 minutes for three variants.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: bash next_ab.sh NAME=FLAGS NAME=FLAGS [...]" >&2; exit 2; }
R=/tmp/r; rm -rf $R; mkdir -p $R/abn; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
NAMES=(); for v in "$@"; do NAMES+=("${v%%=*}"); done
SAN=${SAN:-${NAMES[1]}}
for v in "$@"; do
  n=${v%%=*}; f=${v#*=}; f=${f//,/ }
  # shellcheck disable=SC2086
  timeout 300 python3 bench/build_kernel.py sm_90a /tmp/kabn_$n $R/abn/build_$n.log $f > /dev/null &
  # shellcheck disable=SC2086
  timeout 300 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE $f bench/kernel_timeline.cu -o /tmp/tl_$n 2> $R/tl_build_$n.log &
  # shellcheck disable=SC2086
  [ "$n" = "$SAN" ] && timeout 300 python3 bench/build_kernel.py sm_90a /tmp/kbuild_rc $R/build_rc.log $f -DDSPARKCTL_WS_RACECHECK_SYNC > /dev/null &
done
wait
OUT=$R/abn PREBUILT=1 TESTS=1 COMPARE=1 TEST_TIMEOUT=120 ROUNDS=${ROUNDS:-3} timeout 420 bash bench/kernel_abn.sh "$@" 2>&1 \
  | tee $R/abn.txt | grep -vE "^decode H=(16|32)"
# BASE_TESTS=1: the GPU tests on the baseline build too (a new test the shipped build has not run)
if [ -n "${BASE_TESTS:-}" ]; then
  DSPARKCTL_KERNEL_SO=/tmp/kabn_${NAMES[0]}/dsparkctl_sparse_mla_sm_90a.so timeout 120 python3 -m pytest tests/test_kernel_gpu.py -q \
    -p no:cacheprovider > $R/abn/gpu_tests_${NAMES[0]}.log 2>&1
  echo "gpu tests ${NAMES[0]}: $(grep -E '[0-9]+ (passed|failed)' $R/abn/gpu_tests_${NAMES[0]}.log | tail -1)"
fi
SUM=()
for n in "${NAMES[@]}"; do
  for sh in "64 192 133 512 50" "64 192 133 0 50" "128 128 128 1024 64"; do timeout 20 /tmp/tl_$n $sh >> $R/timeline_$n.jsonl; done
  SUM+=("$n=$R/timeline_$n.jsonl")
done
python3 bench/ws_timeline_summary.py "${SUM[@]}" | tee $R/summary.txt
SO=/tmp/kabn_$SAN/dsparkctl_sparse_mla_sm_90a.so RC=/tmp/kbuild_rc/dsparkctl_sparse_mla_sm_90a.so
{ echo "== memcheck ($SAN)"; DSPARKCTL_KERNEL_SO=$SO timeout 120 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset or clustered_ctas" 2>&1 | tail -4
  echo "== racecheck ($SAN rendezvous build)"; DSPARKCTL_KERNEL_SO=$RC timeout 120 compute-sanitizer --tool racecheck python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset and T2" 2>&1 | tail -4
  echo "== racecheck probe ($SAN rendezvous build)"; DSPARKCTL_KERNEL_SO=$RC timeout 120 compute-sanitizer --tool racecheck python3 bench/racecheck_ws_probe.py > $R/racecheck_probe.log 2>&1; echo "$(grep -c '^ok' $R/racecheck_probe.log) launches ok | $(grep SUMMARY $R/racecheck_probe.log)"; } 2>&1 | tee $R/sanitizers.txt
# KEEP=1 (session 29): the variants' builds stay for the caller's own runs after this script
[ -n "${KEEP:-}" ] || rm -rf /tmp/kabn_* /tmp/kbuild_rc
rm -f $R/abn/*.pt; cd $R && tar czf $OUT/r.tgz .
