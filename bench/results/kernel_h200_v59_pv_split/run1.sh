#!/usr/bin/env bash
# session 32 (device, last call): -DDSPARKCTL_WS_PV_SPLIT=192 (warpgroup 0's P.V keeps dims 0-191,
# warpgroup 1 takes 192-511: the tensor work 3,584 / 2,560 units a tile instead of 4,096 / 2,048)
# against v53: GPU tests, outputs against v53 (not bit-equal by design: dims 192-255 take the e4m3
# lo part), 2 alternating rounds; then, for the candidate, memcheck on the sanitizer subset,
# racecheck on its -DDSPARKCTL_WS_RACECHECK_SYNC build (subset T2, bench/racecheck_ws_probe.py) and
# the product's smoke at TP 4 (accuracy against the fp64 reference).
# (the steps it ran are bench/kernel_candidate_check.sh's, written once there after the call)
set -uo pipefail
cd "$(dirname "$0")/../../.."
NAME=pvs FLAGS=-DDSPARKCTL_WS_PV_SPLIT=192 ROUNDS=2 bash bench/kernel_candidate_check.sh
