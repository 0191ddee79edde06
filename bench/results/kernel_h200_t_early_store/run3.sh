#!/usr/bin/env bash
# Session 47, call 4: v74 as the default build: the whole GPU test file (the new
# test_32_head_tiles_write_rows_in_two_halves included) memcheck over the new test, racecheck over two of its cases. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
A=/tmp/c4; rm -rf $A; mkdir -p $A
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kb74 $A/build.log > /dev/null; echo "build rc=$?"
export DSPARKCTL_KERNEL_SO=/tmp/kb74/dsparkctl_sparse_mla_sm_90a.so
timeout 200 python3 -m pytest tests/test_kernel_gpu.py -q -x > $A/gpu_tests.log 2>&1; echo "gpu tests rc=$?"; tail -2 $A/gpu_tests.log
timeout 150 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k two_halves > $A/memcheck.log 2>&1
echo "memcheck rc=$?"; grep -E "passed|failed|ERROR SUMMARY" $A/memcheck.log
timeout 150 compute-sanitizer --tool racecheck python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "two_halves and (40-3 or 128-1)" > $A/racecheck.log 2>&1
echo "racecheck rc=$?"; grep -E "passed|failed|RACECHECK SUMMARY" $A/racecheck.log
(cd $A && tar czf "$OUT/r.tgz" .)
