#!/usr/bin/env bash
# Session 35's second dequantization candidate (-DDSPARKCTL_DEQ_SPLIT16=1 -DDSPARKCTL_DEQ_UNSIGNED=1, off
# by default) against v61 (the tree's default) in one call (bench/kernel_candidate_check.sh: GPU tests and
# outputs bit for bit against v61, 3 alternating bench rounds of the short rows and the 64/128-head
# rows, memcheck, racecheck, the product's smoke at TP 4). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=$OUT NAME=deq2 FLAGS="-DDSPARKCTL_DEQ_SPLIT16=1 -DDSPARKCTL_DEQ_UNSIGNED=1" BASE=v61 ROUNDS=3 timeout 570 bash bench/kernel_candidate_check.sh
