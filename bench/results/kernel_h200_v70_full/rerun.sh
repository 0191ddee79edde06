#!/usr/bin/env bash
# v70 (session 44, call 4): the bench table once more on the shipped build, as v69's record took its
# third table (call 3's first ran right after the sanitizers), into $OUT/kernel_bench_r3.{json,md}.
# Carry .dev/s30 (the Triton peer).
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/v70 /tmp/v70_build.log > /dev/null || { tail -20 /tmp/v70_build.log; exit 1; }
DSPARKCTL_KERNEL_SO=/tmp/v70/dsparkctl_sparse_mla_sm_90a.so python3 bench/bench_kernel.py --triton-peer .dev/s30/kernel_peer/flash_mla_sm120_triton.py \
  --json "$OUT/kernel_bench_r3.json" --md "$OUT/kernel_bench_r3.md" > "$OUT/bench_r3.log" 2>&1 || tail -20 "$OUT/bench_r3.log"
grep -E "dspark|\| 1 \|" "$OUT/kernel_bench_r3.md"
