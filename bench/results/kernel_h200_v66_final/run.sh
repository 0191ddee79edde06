#!/usr/bin/env bash
# Session 38, device call 6: the final source (one helper for the dims 0-255 P.V sequence; its sm_90a
# SASS is c2601f9's, function by function, on the CPU) built and the kernel's GPU tests run on it.
# Writes $OUT/build.log and $OUT/gpu_tests.log.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
t0=$(date +%s)
timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kf "$OUT/build.log" > /dev/null || { echo BUILD FAILED; tail -20 "$OUT/build.log"; exit 1; }
DSPARKCTL_KERNEL_SO=/tmp/kf/dsparkctl_sparse_mla_sm_90a.so timeout 240 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider > "$OUT/gpu_tests.log" 2>&1
echo "tests rc=$? $(tail -1 "$OUT/gpu_tests.log")"
echo "total $(( $(date +%s) - t0 )) s"
