#!/usr/bin/env bash
# Session 45, device call 3 (this directory's call 1): DSPARKCTL_SINK_EARLY (the sink logit loaded with a row finish's first
# loads; 3, the candidate's default) against v71 (-DDSPARKCTL_SINK_EARLY=0, whose sm_90a SASS is
# v71's, 22 of 22 functions). GPU tests on the candidate, outputs against v71 bit for bit, 6
# alternating rounds of the --short rows (bench/kernel_abn.sh); then on the candidate: memcheck on
# the sanitizer subset, racecheck on its WS rendezvous build and the WS probe, the smoke at TP 4.
# Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
A=/tmp/abn; rm -rf $A; mkdir -p $A; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
. bench/kernel_checks.sh
export CHECK_TIMEOUT=150
t0=$(date +%s)
{
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v71 $A/build_v71.log -DDSPARKCTL_SINK_EARLY=0 > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_se /tmp/abn/build_se.log > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_serc $A/build_serc.log -DDSPARKCTL_WS_RACECHECK_SYNC > /dev/null &
  wait
}
echo "builds $(( $(date +%s) - t0 )) s"
OUT=$A ROUNDS=6 TESTS=1 COMPARE=1 PREBUILT=1 BENCH_SETS='--short' timeout 360 bash bench/kernel_abn.sh v71=-DDSPARKCTL_SINK_EARLY=0 se= > $A/abn.log 2>&1
tail -32 $A/abn.log
echo "abn $(( $(date +%s) - t0 )) s"
SO=/tmp/kabn_se/dsparkctl_sparse_mla_sm_90a.so; RC=/tmp/kabn_serc/dsparkctl_sparse_mla_sm_90a.so
kernel_sanitizers "$SO" "$RC" 6 > $A/sanitizer.log 2>&1
kernel_ws_race_probe "$RC" $A/racecheck_ws.log >> $A/sanitizer.log
cat $A/sanitizer.log
kernel_smoke "$SO" $A/smoke_se.json
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
echo "total $(( $(date +%s) - t0 )) s"
