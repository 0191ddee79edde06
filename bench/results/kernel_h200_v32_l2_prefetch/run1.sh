#!/usr/bin/env bash
# v32 run 1 (device): the L2 prefetch of tile it+2's rows (main kernel) and of tile it+1's rows (the
# opt-in WS kernel's producer), each A/B'd against the same tree built with -DDSPARKCTL_NO_L2_PREFETCH;
# then the shipped default against the WS build (both with the prefetch), for the routing question.
set -uo pipefail
R=$OUT/r; mkdir -p $R; export PYTHONPATH=$PWD
ab() { local name=$1; shift; ( env "$@" OUT=$R/$name timeout 260 bash bench/kernel_ab.sh . ) > $R/$name.txt 2>&1; echo "== $name"; grep -E "passed|failed" $R/$name/gpu_tests.log 2>/dev/null | tail -1; sed -n '/^shape/,$p' $R/$name.txt; }
ab pf_short TESTS=1 ROUNDS=2 NVCC_EXTRA_OLD=-DDSPARKCTL_NO_L2_PREFETCH
ab pf_heads ROUNDS=1 NVCC_EXTRA_OLD=-DDSPARKCTL_NO_L2_PREFETCH BENCH_EXTRA="--heads 16 32 64 128"
ab wspf_heads TESTS=1 ROUNDS=1 "NVCC_EXTRA_OLD=-DDSPARKCTL_WS -DDSPARKCTL_NO_L2_PREFETCH" NVCC_EXTRA_NEW=-DDSPARKCTL_WS BENCH_EXTRA="--heads 64 128"
ab ws_vs_v30 ROUNDS=1 NVCC_EXTRA_NEW=-DDSPARKCTL_WS BENCH_EXTRA="--heads 64 128"
