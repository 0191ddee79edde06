#!/usr/bin/env bash
# Session 41, device call 7: -DDSPARKCTL_WS_DH_SPEC_IDS=1 (the halves kernel's producer loads its first
# two tiles' ids beside the lengths; see the flag's comment in the kernel source) against the shipped
# v68: bench/kernel_candidate_check.sh (GPU tests, outputs against v68 (bit for bit expected), memcheck,
# racecheck, the WS probe, the smoke; 4 alternating rounds of the --short rows), then both builds'
# prologue points and tile events at DSpark T = 50. ~4-5 minutes. Packs $OUT/r.tgz and $OUT/tl.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
# (NAME / FL / ROUNDS name another candidate: kernel_h200_ws_dh_split_issue0/run1.sh calls this)
NAME=${NAME:-si}; FL=${FL:--DDSPARKCTL_WS_DH_SPEC_IDS=1}; ROUNDS=${ROUNDS:-4}
BENCH_SETS='--short' OUT=$OUT NAME=$NAME FLAGS="$FL" BASE=v68 ROUNDS=$ROUNDS timeout 330 bash bench/kernel_candidate_check.sh
R=/tmp/tl; rm -rf $R; mkdir -p $R
OUT=$R SHAPES='64 192 133 0 50' timeout 100 bash bench/kernel_timeline_ab.sh v68pro=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_TL_PROLOGUE \
  "${NAME}pro=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_TL_PROLOGUE,$FL"
python3 bench/ws_timeline_summary.py --events v68pro=$R/timeline_v68pro.jsonl "${NAME}pro=$R/timeline_${NAME}pro.jsonl" > $R/events.txt 2>&1
grep -E " tile [0-2] |cta " $R/events.txt
(cd $R && tar czf "$OUT/tl.tgz" .)
