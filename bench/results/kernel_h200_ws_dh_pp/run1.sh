#!/usr/bin/env bash
# Session 41, device call 2: -DDSPARKCTL_WS_DH_PP=1 (the halves kernel's consumer warpgroups in turn on
# whole tiles, P from registers; see the flag's comment in the kernel source) against the shipped v68:
# bench/kernel_candidate_check.sh (GPU tests, which run every case on the halves kernel too (config 7);
# outputs against v68 (not bit for bit where the halves run: another summation order); memcheck,
# racecheck, the WS probe, the smoke; 4 alternating rounds of the --short rows: DSpark T = 50 is the row
# that runs the halves kernel), then both builds' per-tile events at DSpark T = 50 and with the halves
# forced (config 7, unsplit) on 64 heads +1024 T = 8 and DSpark +512 T = 25 / 50. ~5-6 minutes.
# Packs $OUT/r.tgz and $OUT/tl.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
NAME=${NAME:-pp}
FL=${FL:--DDSPARKCTL_WS_DH_PP=1}
BENCH_SETS='--short' OUT=$OUT NAME=$NAME FLAGS="$FL" BASE=v68 ROUNDS=4 timeout 420 bash bench/kernel_candidate_check.sh
R=/tmp/tl; rm -rf $R; mkdir -p $R
OUT=$R SHAPES='64 192 133 0 50;64 128 128 1024 8 7 1;64 192 133 512 25 7 1;64 192 133 512 50 7 1' timeout 170 \
  bash bench/kernel_timeline_ab.sh v68ev=-DDSPARKCTL_TL_EVENTS "${NAME}ev=-DDSPARKCTL_TL_EVENTS,${FL// /,}"
python3 bench/ws_timeline_summary.py --events v68ev=$R/timeline_v68ev.jsonl "${NAME}ev=$R/timeline_${NAME}ev.jsonl" > $R/events.txt 2>&1
grep -E "splits|cta " $R/events.txt | head -20
(cd $R && tar czf "$OUT/tl.tgz" .)
