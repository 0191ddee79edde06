#!/usr/bin/env bash
# Prepared in session 41, run as session 42's device call 1 (README.md): -DDSPARKCTL_WS_DH_SPLIT_ISSUE0=1 (the
# halves kernel's tile 0 copied by the producer and warpgroup 1 together, 8 rows a warp; see the flag's
# comment in the kernel source) against the shipped v68, by the spec-ids call's script: the candidate
# check (GPU tests, outputs against v68 (bit for bit expected: the same rows land in the same places),
# memcheck, racecheck (its rendezvous build makes the new hand-off a sync on both sides), the WS probe,
# the smoke; 6 alternating rounds of the --short rows: DSpark T = 50 is the row on the halves kernel),
# then both builds' prologue points (printed by name: ws_timeline_summary.py --prologue) and tile
# events at DSpark T = 50. Expect tile 0's copies issued
# and landed earlier, and everything after them earlier by about as much. ~5 minutes. Packs
# $OUT/r.tgz and $OUT/tl.tgz. (The flag's code left the source after the session: apply
# candidate.patch first.)
set -uo pipefail
cd "$(dirname "$0")/../../.."
NAME=s0 FL=-DDSPARKCTL_WS_DH_SPLIT_ISSUE0=1 ROUNDS=6 bash bench/results/kernel_h200_ws_dh_spec_ids/run1.sh
# the prologue points by name (that script leaves its timelines in /tmp/tl)
python3 bench/ws_timeline_summary.py --prologue v68=/tmp/tl/timeline_v68pro.jsonl s0=/tmp/tl/timeline_s0pro.jsonl
