#!/usr/bin/env bash
# Session 44, device call 2 (~6 minutes): -DDSPARKCTL_FINISH_ROWS_LOOP=1 (the 32-head LARGE kernel's row
# finish as a rolled loop: 6,184 -> 5,120 SASS instructions on sm_90a; see the flag's comment in the
# kernel source) against the shipped v69: bench/kernel_candidate_check.sh (GPU tests, outputs against
# v69 (bit for bit expected), memcheck, racecheck (rendezvous build) and the WS probe, the smoke;
# 6 alternating rounds of the --short rows: DSpark +512 T = 5 / 10 and T = 1 at 128 heads +1024 run
# the 32-head LARGE kernel). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
BENCH_SETS='--short' OUT=$OUT NAME=fl FLAGS=-DDSPARKCTL_FINISH_ROWS_LOOP=1 BASE=v69 ROUNDS=6 timeout 420 bash bench/kernel_candidate_check.sh
