#!/usr/bin/env bash
# Session 43, device call 5 (~5 minutes): -DDSPARKCTL_WS_DH_CONV0_FIRST=1 (the halves kernel's producer
# converts tile 0 before it preps and issues tile 1; see the flag's comment in the kernel source)
# against the shipped v69: bench/kernel_candidate_check.sh (GPU tests, outputs against v69 (bit for bit
# expected), memcheck, racecheck (rendezvous build) and the WS probe, the smoke; 5 alternating rounds
# of the --short rows: DSpark T = 50 is the row on the halves kernel), then both builds' prologue
# points and tile events at DSpark T = 50. Packs $OUT/r.tgz and $OUT/tl.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
FL=-DDSPARKCTL_WS_DH_CONV0_FIRST=1
BENCH_SETS='--short' OUT=$OUT NAME=cf FLAGS="$FL" BASE=v69 ROUNDS=5 timeout 360 bash bench/kernel_candidate_check.sh
R=/tmp/tl; rm -rf $R; mkdir -p $R
P=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_TL_PROLOGUE
OUT=$R SHAPES='64 192 133 0 50' timeout 100 bash bench/kernel_timeline_ab.sh v69=$P cf=$P,$FL > /dev/null 2>&1
python3 bench/ws_timeline_summary.py --prologue v69=$R/timeline_v69.jsonl cf=$R/timeline_cf.jsonl
python3 bench/ws_timeline_summary.py --events v69=$R/timeline_v69.jsonl cf=$R/timeline_cf.jsonl > $R/events.txt 2>&1
grep -E " tile [0-2] |cta " $R/events.txt
(cd $R && tar czf "$OUT/tl.tgz" .)
