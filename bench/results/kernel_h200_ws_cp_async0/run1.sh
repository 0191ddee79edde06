#!/usr/bin/env bash
# Session 43, device call 3 (~6 minutes): -DDSPARKCTL_WS_CP_ASYNC0=1 (the halves kernel's first tile copied
# by cp.async, 16 bytes a producer thread, instead of one bulk copy a row issued lane by lane) and =2
# (every WS kernel on the 16-byte path) against the shipped v69 in one bench/kernel_abn.sh call (GPU
# tests on each, outputs against v69 bit for bit, 5 alternating rounds of the --short rows); then
# memcheck, racecheck (rendezvous build), the WS racecheck probe and the smoke on =2 (it holds both
# kernels' change); then the prologue points of v69 and =1 at DSpark T = 50. Packs $OUT/r.tgz, $OUT/tl.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
A=/tmp/abn; rm -rf $A; mkdir -p $A
# shellcheck source=bench/kernel_checks.sh
. bench/kernel_checks.sh
export CHECK_TIMEOUT=150
{
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v69 $A/build_v69.log > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_ca1 $A/build_ca1.log -DDSPARKCTL_WS_CP_ASYNC0=1 > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_ca2 $A/build_ca2.log -DDSPARKCTL_WS_CP_ASYNC0=2 > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_ca2rc $A/build_ca2rc.log -DDSPARKCTL_WS_CP_ASYNC0=2 -DDSPARKCTL_WS_RACECHECK_SYNC > /dev/null &
  wait
}
BENCH_SETS='--short' OUT=$A ROUNDS=5 TESTS=1 COMPARE=1 PREBUILT=1 timeout 330 bash bench/kernel_abn.sh v69= ca1=-DDSPARKCTL_WS_CP_ASYNC0=1 ca2=-DDSPARKCTL_WS_CP_ASYNC0=2 > $A/abn.log 2>&1
tail -32 $A/abn.log
SO=/tmp/kabn_ca2/dsparkctl_sparse_mla_sm_90a.so; RC=/tmp/kabn_ca2rc/dsparkctl_sparse_mla_sm_90a.so
kernel_sanitizers "$SO" "$RC" 6 > $A/sanitizer.log 2>&1
kernel_ws_race_probe "$RC" $A/racecheck_ws.log >> $A/sanitizer.log
cat $A/sanitizer.log
kernel_smoke "$SO" $A/smoke_ca2.json
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
R=/tmp/tl; rm -rf $R; mkdir -p $R
P=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_TL_PROLOGUE
OUT=$R SHAPES='64 192 133 0 50' timeout 100 bash bench/kernel_timeline_ab.sh v69=$P ca1=$P,-DDSPARKCTL_WS_CP_ASYNC0=1 > /dev/null 2>&1
python3 bench/ws_timeline_summary.py --prologue v69=$R/timeline_v69.jsonl ca1=$R/timeline_ca1.jsonl
python3 bench/ws_timeline_summary.py --events v69=$R/timeline_v69.jsonl ca1=$R/timeline_ca1.jsonl > $R/events.txt 2>&1
grep -E " tile [0-2] |cta " $R/events.txt
(cd $R && tar czf "$OUT/tl.tgz" .)
