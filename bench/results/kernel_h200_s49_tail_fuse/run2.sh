#!/usr/bin/env bash
# Session 49, device call 3: the second form of the candidate -DDSPARKCTL_WS_DH_TAIL_FUSE=1 (the halves kernel takes a
# <= 16-live tail tile with the full tile before it) against v74 (the same tree without the flag,
# whose SASS is v74's, 22 of 22 functions): bench/kernel_candidate_check.sh (GPU tests on the
# candidate, 3 alternating rounds of the --short tables, outputs against v74, memcheck, racecheck,
# the WS probe, the smoke), then per-tile events of both at DSpark T = 50 (valid 133 and 144).
set -uo pipefail
cd "$(dirname "$0")/../../.."
R=/tmp/s49r3; rm -rf $R; mkdir -p $R
NAME=tf FLAGS=-DDSPARKCTL_WS_DH_TAIL_FUSE=1 BASE=v74 ROUNDS=3 timeout 420 bash bench/kernel_candidate_check.sh
OUT2=$R/tl; mkdir -p $OUT2
OUT=$OUT2 SHAPES='64 192 133 0 50;64 192 144 0 50' timeout 150 bash bench/kernel_timeline_ab.sh \
  v74ev=-DDSPARKCTL_TL_EVENTS tfev=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_WS_DH_TAIL_FUSE=1 > /dev/null 2>&1
python3 bench/ws_timeline_summary.py --events v74ev=$OUT2/timeline_v74ev.jsonl tfev=$OUT2/timeline_tfev.jsonl | tee $R/events.txt
(cd $R && tar czf "$OUT/r2.tgz" .)
