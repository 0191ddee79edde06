#!/usr/bin/env bash
# Session 46, device call 5: the adaptive split-front candidate (-DDSPARKCTL_SPLIT_FRONT=2: front-loaded
# only for rows whose main length is below its tile capacity, decided on the device) against v72,
# as run1.sh: GPU tests and outputs, 5 alternating rounds of the full table, memcheck, racecheck and
# the probe, the smoke at TP 4. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
BENCH_SETS='--no-ref' OUT=$OUT NAME=adapt FLAGS=-DDSPARKCTL_SPLIT_FRONT=2 BASE=v72 ROUNDS=5 \
  timeout 500 bash bench/kernel_candidate_check.sh 2>&1 | tail -70
