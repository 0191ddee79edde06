#!/usr/bin/env bash
# v32 run 1 (device): the warp-specialized kernel routed by the plan (128-head chains on Hopper).
# GPU tests (now with the forced large_ws layout and the routing test), memcheck / racecheck on the
# sanitizer subset, then same-call A/Bs: this tree built with -DDSPARKCTL_NO_WS (old) vs as shipped.
set -uo pipefail
R=$OUT/r; mkdir -p $R; export PYTHONPATH=$PWD
ab() { local name=$1; shift; ( env "$@" OUT=$R/$name timeout 280 bash bench/kernel_ab.sh . ) > $R/$name.txt 2>&1; echo "== $name"; grep -E "passed|failed" $R/$name/gpu_tests.log 2>/dev/null | tail -3; sed -n '/^shape/,$p' $R/$name.txt; }
ab heads TESTS=1 ROUNDS=2 NVCC_EXTRA_OLD=-DDSPARKCTL_NO_WS BENCH_EXTRA="--heads 64 128"
cp $R/heads/gpu_tests.log $R/gpu_tests.log 2>/dev/null
grep -E "^(FAILED|ERROR)" $R/gpu_tests.log | head -20
for tool in memcheck racecheck; do DSPARKCTL_KERNEL_SO=/tmp/kab_new/dsparkctl_sparse_mla_sm_90a.so timeout 150 compute-sanitizer --tool $tool python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset or routes_the_warp" > $R/$tool.log 2>&1; echo "$tool rc=$?"; grep -E "SUMMARY|passed|failed" $R/$tool.log | tail -2; done
ab short ROUNDS=1 NVCC_EXTRA_OLD=-DDSPARKCTL_NO_WS
