#!/usr/bin/env bash
# Session 48, call 1: the 32-head transposed tiles dequantize the next tile under this tile's P.V
# (-DDSPARKCTL_T_DEQ_AHEAD=1, a second KV tile) against v74 (the default build): 5 alternating rounds
# of the full bench table (--no-ref), the GPU tests and outputs of both builds, memcheck, racecheck,
# the WS probe and the smoke on the candidate (bench/kernel_candidate_check.sh). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/gpu.txt" 2>&1
NAME=tda FLAGS=-DDSPARKCTL_T_DEQ_AHEAD=1 BASE=v74 ROUNDS=5 BENCH_SETS='--no-ref' bash bench/kernel_candidate_check.sh
