#!/usr/bin/env bash
# Session 43, device call 2 (~6 minutes): -DDSPARKCTL_WS_DH_P32=1 (the halves kernel's warpgroup 0 hands
# P to warpgroup 1 as fp32; warpgroup 1 makes P's forms; see the flag's comment in the kernel source)
# against the shipped v69: bench/kernel_candidate_check.sh (GPU tests, outputs against v69 (bit for bit
# expected), memcheck, racecheck (rendezvous build) and the WS probe, the smoke; 6 alternating rounds
# of the --short rows: DSpark T = 50 is the row on the halves kernel), then both builds' prologue
# points and tile events at DSpark T = 50. Packs $OUT/r.tgz and $OUT/tl.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
FL=-DDSPARKCTL_WS_DH_P32=1
BENCH_SETS='--short' OUT=$OUT NAME=p32 FLAGS="$FL" BASE=v69 ROUNDS=6 timeout 380 bash bench/kernel_candidate_check.sh
R=/tmp/tl; rm -rf $R; mkdir -p $R
P=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_TL_PROLOGUE
OUT=$R SHAPES='64 192 133 0 50' timeout 120 bash bench/kernel_timeline_ab.sh v69=$P p32=$P,$FL > /dev/null 2>&1
python3 bench/ws_timeline_summary.py --prologue v69=$R/timeline_v69.jsonl p32=$R/timeline_p32.jsonl
python3 bench/ws_timeline_summary.py --events v69=$R/timeline_v69.jsonl p32=$R/timeline_p32.jsonl > $R/events.txt 2>&1
grep -E " tile [0-2] |cta " $R/events.txt
(cd $R && tar czf "$OUT/tl.tgz" .)
