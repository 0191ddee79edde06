#!/usr/bin/env bash
# Session 35's dequantization candidate (-DDSPARKCTL_POW2_F32=1 -DDSPARKCTL_DEQ_LANE_HALVES=1, off
# by default) against the shipped v60 in one call (bench/kernel_candidate_check.sh: GPU tests and
# outputs bit for bit against v60, 3 alternating bench rounds of the short rows and the 64/128-head
# rows, memcheck, racecheck, the product's smoke at TP 4). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=$OUT NAME=deq FLAGS="-DDSPARKCTL_POW2_F32=1 -DDSPARKCTL_DEQ_LANE_HALVES=1" BASE=v60 ROUNDS=3 timeout 570 bash bench/kernel_candidate_check.sh
