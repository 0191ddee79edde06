#!/usr/bin/env bash
# Session 46, device call 4: the split-front candidate (-DDSPARKCTL_SPLIT_FRONT=1: uneven splits give
# their extra tile to the first splits) against v72 (the default build), with
# bench/kernel_candidate_check.sh: GPU tests and outputs against v72, 5 alternating rounds of the
# full bench table (no reference, no Triton), memcheck, racecheck (rendezvous build) and the probe,
# the smoke at TP 4. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
BENCH_SETS='--no-ref' OUT=$OUT NAME=front FLAGS=-DDSPARKCTL_SPLIT_FRONT=1 BASE=v72 ROUNDS=5 \
  timeout 560 bash bench/kernel_candidate_check.sh 2>&1 | tail -70
