#!/usr/bin/env bash
# Session 33's second split-K candidate (-DDSPARKCTL_SMALL_SPLIT_K=1: the 32-candidate SMALL16 / SMALL
# tiles, SM120 / SM121's only layouts), measured the only way the H200 can: both sides built with
# SM120's register budget (-DDSPARKCTL_SMALL_MIN_BLOCKS=1, one SMALL CTA per SM, as on SM120). GPU
# tests and outputs on the candidate, then 3 alternating rounds with SMALL forced and with SMALL16
# forced (two A/Bs: a shape is reported from the first bench set that has it), then memcheck on the
# sanitizer subset and racecheck on its T2 cases (the same build: the WS racecheck flag only matters
# to the WS kernel). Results packed into $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
A=/tmp/abs; rm -rf $A; mkdir -p $A; export PYTHONPATH=$PWD
# shellcheck source=bench/kernel_checks.sh
. bench/kernel_checks.sh
export CHECK_TIMEOUT=120
{
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_r120 $A/build_r120.log -DDSPARKCTL_SMALL_MIN_BLOCKS=1 > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_r120sk $A/build_r120sk.log -DDSPARKCTL_SMALL_MIN_BLOCKS=1 -DDSPARKCTL_SMALL_SPLIT_K=1 > /dev/null &
  wait
}
OUT=$A/small ROUNDS=3 TESTS=1 COMPARE=1 PREBUILT=1 BENCH_SETS='--short --config small' timeout 240 \
  bash bench/kernel_abn.sh r120=-DDSPARKCTL_SMALL_MIN_BLOCKS=1 r120sk=-DDSPARKCTL_SMALL_MIN_BLOCKS=1,-DDSPARKCTL_SMALL_SPLIT_K=1 > $A/abn_small.log 2>&1
tail -24 $A/abn_small.log
OUT=$A/small16 ROUNDS=3 PREBUILT=1 BENCH_SETS='--short --config small16' timeout 150 \
  bash bench/kernel_abn.sh r120=-DDSPARKCTL_SMALL_MIN_BLOCKS=1 r120sk=-DDSPARKCTL_SMALL_MIN_BLOCKS=1,-DDSPARKCTL_SMALL_SPLIT_K=1 > $A/abn_small16.log 2>&1
tail -20 $A/abn_small16.log
SO=/tmp/kabn_r120sk/dsparkctl_sparse_mla_sm_90a.so
kernel_sanitizers "$SO" "$SO" 6 > $A/sanitizer.log 2>&1
cat $A/sanitizer.log
rm -f $A/*.pt $A/*/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
