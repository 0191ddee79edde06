#!/usr/bin/env bash
# Session 41, device call 6: -DDSPARKCTL_WS_DH_LATE_PREP=1 (on a chain of 3 tiles, v68's producer
# converts tile 1 before preparing tile 2; see the flag's comment in the kernel source) against the
# shipped v68: bench/kernel_candidate_check.sh (GPU tests, outputs against v68 (bit for bit expected:
# only the order of the producer's work moves), memcheck, racecheck, the WS probe, the smoke; 6
# alternating rounds of the --short rows: DSpark T = 50 is the row with 3-tile halves CTAs), then both
# builds' per-tile events at DSpark T = 50. ~5-6 minutes. Packs $OUT/r.tgz and $OUT/tl.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
NAME=lp; FL=-DDSPARKCTL_WS_DH_LATE_PREP=1
BENCH_SETS='--short' OUT=$OUT NAME=$NAME FLAGS="$FL" BASE=v68 ROUNDS=6 timeout 420 bash bench/kernel_candidate_check.sh
R=/tmp/tl; rm -rf $R; mkdir -p $R
OUT=$R SHAPES='64 192 133 0 50' timeout 120 bash bench/kernel_timeline_ab.sh v68ev=-DDSPARKCTL_TL_EVENTS "${NAME}ev=-DDSPARKCTL_TL_EVENTS,$FL"
python3 bench/ws_timeline_summary.py --events v68ev=$R/timeline_v68ev.jsonl "${NAME}ev=$R/timeline_${NAME}ev.jsonl" > $R/events.txt 2>&1
grep -E " tile |cta " $R/events.txt
(cd $R && tar czf "$OUT/tl.tgz" .)
