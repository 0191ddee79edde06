#!/usr/bin/env bash
# Session 47, call 2: the 32-head transposed tiles' rows written in two halves, the first under the
# last tile's P.V (-DDSPARKCTL_T_EARLY_STORE=1) against v73 (the default build): 5 alternating rounds
# of the full bench table (--no-ref), the GPU tests and outputs of both builds, memcheck, racecheck,
# the WS probe and the smoke on the candidate (bench/kernel_candidate_check.sh). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
NAME=tes FLAGS=-DDSPARKCTL_T_EARLY_STORE=1 BASE=v73 ROUNDS=5 BENCH_SETS='--no-ref' bash bench/kernel_candidate_check.sh
