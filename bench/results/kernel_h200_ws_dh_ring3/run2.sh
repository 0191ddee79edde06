#!/usr/bin/env bash
# Session 40, device call 3: run1.sh's candidate with the producer's order as v67's (tile k's
# offsets prepared after tile k - 2's conversion; run1's prepared tile 2's before converting tile 0,
# which delayed tile 0), and warpgroup 0's Q-free hand-off a rendezvous in the racecheck build (as
# P's). Same checks and timelines as run1.sh. ~5 minutes.
set -uo pipefail
cd "$(dirname "$0")/../../.."
BENCH_SETS='--short' OUT=$OUT NAME=r3b FLAGS="-DDSPARKCTL_WS_DH_RING3=1" BASE=v67 ROUNDS=4 timeout 450 bash bench/kernel_candidate_check.sh
R=/tmp/tl; rm -rf $R; mkdir -p $R
OUT=$R SHAPES='64 192 133 0 50;64 128 128 1024 8 7 1' timeout 150 bash bench/kernel_timeline_ab.sh v67= r3b=-DDSPARKCTL_WS_DH_RING3=1
(cd $R && tar czf "$OUT/tl.tgz" .)
