#!/usr/bin/env bash
# Prepared in session 42 (CPU only, not yet run; ~6 minutes): -DDSPARKCTL_WS_DH_SHARE_CONV=1 (the
# halves kernel's tile 0 converted by the producer and warpgroup 1 together, on two mbarriers; see the
# flag's comment in the kernel source) against the shipped v69: bench/kernel_candidate_check.sh (GPU
# tests, outputs against v69 (bit for bit expected: the same bytes converted by other threads),
# memcheck, racecheck (rendezvous build) and the WS probe, the smoke; 6 alternating rounds of the
# --short rows: DSpark T = 50 is the row on the halves kernel), then both builds' prologue points and
# tile events at DSpark T = 50, and the same with -DDSPARKCTL_WS_Q_EARLY=2 added (warpgroup 0's Q path
# earlier too: the two paths ended together in session 42's s0qe). Expect tile 0 published ~600-800
# cycles earlier. Packs $OUT/r.tgz and $OUT/tl.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
FL=-DDSPARKCTL_WS_DH_SHARE_CONV=1
BENCH_SETS='--short' OUT=$OUT NAME=sc FLAGS="$FL" BASE=v69 ROUNDS=6 timeout 360 bash bench/kernel_candidate_check.sh
R=/tmp/tl; rm -rf $R; mkdir -p $R
P=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_TL_PROLOGUE
OUT=$R SHAPES='64 192 133 0 50' timeout 120 bash bench/kernel_timeline_ab.sh v69=$P sc=$P,$FL scqe=$P,$FL,-DDSPARKCTL_WS_Q_EARLY=2 > /dev/null 2>&1
python3 bench/ws_timeline_summary.py --prologue v69=$R/timeline_v69.jsonl sc=$R/timeline_sc.jsonl scqe=$R/timeline_scqe.jsonl
python3 bench/ws_timeline_summary.py --events v69=$R/timeline_v69.jsonl sc=$R/timeline_sc.jsonl scqe=$R/timeline_scqe.jsonl > $R/events.txt 2>&1
grep -E " tile [0-2] |cta " $R/events.txt
(cd $R && tar czf "$OUT/tl.tgz" .)
