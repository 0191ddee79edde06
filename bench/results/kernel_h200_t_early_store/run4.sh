#!/usr/bin/env bash
# Session 47, call 5: v74's bench table (the default build, with the Triton peer). Carry .dev/s30.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
A=/tmp/c5; rm -rf $A; mkdir -p $A
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kb74 $A/build.log > /dev/null; echo "build rc=$?"
DSPARKCTL_KERNEL_SO=/tmp/kb74/dsparkctl_sparse_mla_sm_90a.so timeout 150 python3 bench/bench_kernel.py \
  --triton-peer .dev/s30/kernel_peer/flash_mla_sm120_triton.py --json $A/kernel_bench.json --md $A/kernel_bench.md > $A/bench.log 2>&1
echo "bench rc=$?"; grep -E "dspark|\| 1 \|" $A/kernel_bench.md | head -20
(cd $A && tar czf "$OUT/r.tgz" .)
