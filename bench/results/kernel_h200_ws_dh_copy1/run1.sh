#!/usr/bin/env bash
# Session 44, device call 1 (~7 minutes): -DDSPARKCTL_WS_DH_COPY1=1 (the halves kernel's tile 1 copied by
# warpgroup 1 from offsets the producer posts before converting tile 0) and =2 (the producer issues
# them after converting tile 0) against the shipped v69 in one bench/kernel_abn.sh call (GPU tests on
# each, outputs against v69 bit for bit, 5 alternating rounds of the --short rows: DSpark T = 50 is
# the row on the halves kernel); memcheck, racecheck (rendezvous build), the WS racecheck probe and
# the smoke on =1 (a new cross-role hand-off); then the prologue points and tile events of all three
# at DSpark T = 50. Packs $OUT/r.tgz and $OUT/tl.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
A=/tmp/abn; rm -rf $A; mkdir -p $A
# shellcheck source=bench/kernel_checks.sh
. bench/kernel_checks.sh
export CHECK_TIMEOUT=150
{
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v69 $A/build_v69.log > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_k1 $A/build_k1.log -DDSPARKCTL_WS_DH_COPY1=1 > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_k2 $A/build_k2.log -DDSPARKCTL_WS_DH_COPY1=2 > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_k1rc $A/build_k1rc.log -DDSPARKCTL_WS_DH_COPY1=1 -DDSPARKCTL_WS_RACECHECK_SYNC > /dev/null &
  wait
}
BENCH_SETS='--short' OUT=$A ROUNDS=5 TESTS=1 COMPARE=1 PREBUILT=1 timeout 360 bash bench/kernel_abn.sh v69= k1=-DDSPARKCTL_WS_DH_COPY1=1 k2=-DDSPARKCTL_WS_DH_COPY1=2 > $A/abn.log 2>&1
tail -32 $A/abn.log
SO=/tmp/kabn_k1/dsparkctl_sparse_mla_sm_90a.so; RC=/tmp/kabn_k1rc/dsparkctl_sparse_mla_sm_90a.so
kernel_sanitizers "$SO" "$RC" 6 > $A/sanitizer.log 2>&1
kernel_ws_race_probe "$RC" $A/racecheck_ws.log >> $A/sanitizer.log
cat $A/sanitizer.log
kernel_smoke "$SO" $A/smoke_k1.json
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
R=/tmp/tl; rm -rf $R; mkdir -p $R
P=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_TL_PROLOGUE
OUT=$R SHAPES='64 192 133 0 50' timeout 110 bash bench/kernel_timeline_ab.sh v69=$P k1=$P,-DDSPARKCTL_WS_DH_COPY1=1 k2=$P,-DDSPARKCTL_WS_DH_COPY1=2 > /dev/null 2>&1
python3 bench/ws_timeline_summary.py --prologue v69=$R/timeline_v69.jsonl k1=$R/timeline_k1.jsonl k2=$R/timeline_k2.jsonl
python3 bench/ws_timeline_summary.py --events v69=$R/timeline_v69.jsonl k1=$R/timeline_k1.jsonl k2=$R/timeline_k2.jsonl > $R/events.txt 2>&1
grep -E " tile [0-2] |cta " $R/events.txt
(cd $R && tar czf "$OUT/tl.tgz" .)
