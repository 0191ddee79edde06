#!/usr/bin/env bash
# session 32 (device, last call): -DDSPARKCTL_WS_MASK_EARLY=1 (warpgroup 0 loads the tile's valid
# flags before issuing S) against v53: GPU tests, outputs bit for bit, 3 alternating rounds; then,
# for the candidate, what the full run checks that bears on a WS-only change: memcheck on the
# sanitizer subset, racecheck on its -DDSPARKCTL_WS_RACECHECK_SYNC build (subset T2 and
# bench/racecheck_ws_probe.py), and the product's smoke at TP 4.
# (the steps it ran are bench/kernel_candidate_check.sh's, written once there after the call)
set -uo pipefail
cd "$(dirname "$0")/../../.."
NAME=mke FLAGS=-DDSPARKCTL_WS_MASK_EARLY=1 ROUNDS=3 bash bench/kernel_candidate_check.sh
