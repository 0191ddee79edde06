#!/usr/bin/env bash
# Session 40, device call 3: run1.sh's candidate with the producer's order as v67's (tile k's
# offsets prepared after tile k - 2's conversion; run1's prepared tile 2's before converting tile 0,
# which delayed tile 0), and warpgroup 0's Q-free hand-off a rendezvous in the racecheck build (as
# P's). Same checks and timelines as run1.sh. ~5 minutes.
set -uo pipefail
NAME=r3b exec bash "$(dirname "$0")/run1.sh"
