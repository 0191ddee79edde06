#!/usr/bin/env bash
# v69 (session 42, call 4): the bench table twice more on the shipped build, away from the
# sanitizers (call 3's table ran right after them), into $OUT/kernel_bench_r{2,3}.{json,md}.
# Carry .dev/s30 (the Triton peer).
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/v69 /tmp/v69_build.log > /dev/null || { tail -20 /tmp/v69_build.log; exit 1; }
for r in 2 3; do
  DSPARKCTL_KERNEL_SO=/tmp/v69/dsparkctl_sparse_mla_sm_90a.so python3 bench/bench_kernel.py --triton-peer .dev/s30/kernel_peer/flash_mla_sm120_triton.py \
    --json "$OUT/kernel_bench_r$r.json" --md "$OUT/kernel_bench_r$r.md" > "$OUT/bench_r$r.log" 2>&1 || tail -20 "$OUT/bench_r$r.log"
  grep -E "dspark" "$OUT/kernel_bench_r$r.md"
done
