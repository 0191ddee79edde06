#!/usr/bin/env bash
# Prepared in session 41 for the next device call (not yet run): -DDSPARKCTL_WS_DH_SPLIT_ISSUE0=1 (the
# halves kernel's tile 0 copied by the producer and warpgroup 1 together, 8 rows a warp; see the flag's
# comment in the kernel source) against the shipped v68: bench/kernel_candidate_check.sh (GPU tests,
# outputs against v68 (bit for bit expected: the same rows land in the same places), memcheck,
# racecheck (its rendezvous build makes the new hand-off a sync on both sides), the WS probe, the
# smoke; 6 alternating rounds of the --short rows: DSpark T = 50 is the row on the halves kernel),
# then both builds' prologue points and tile events at DSpark T = 50. Expect tile 0's copies issued
# and landed earlier, and everything after them earlier by about as much. ~5 minutes. Packs
# $OUT/r.tgz and $OUT/tl.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
NAME=s0; FL=-DDSPARKCTL_WS_DH_SPLIT_ISSUE0=1
BENCH_SETS='--short' OUT=$OUT NAME=$NAME FLAGS="$FL" BASE=v68 ROUNDS=6 timeout 420 bash bench/kernel_candidate_check.sh
R=/tmp/tl; rm -rf $R; mkdir -p $R
OUT=$R SHAPES='64 192 133 0 50' timeout 100 bash bench/kernel_timeline_ab.sh v68pro=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_TL_PROLOGUE \
  "${NAME}pro=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_TL_PROLOGUE,$FL"
python3 bench/ws_timeline_summary.py --events v68pro=$R/timeline_v68pro.jsonl "${NAME}pro=$R/timeline_${NAME}pro.jsonl" > $R/events.txt 2>&1
grep -E " tile [0-2] |cta " $R/events.txt
(cd $R && tar czf "$OUT/tl.tgz" .)
