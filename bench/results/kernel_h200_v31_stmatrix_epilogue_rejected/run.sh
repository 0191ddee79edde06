#!/usr/bin/env bash
# prepared in session 18 for the next session (not run): (1) the GPU tests on HEAD, incl. the new
# test_narrow_loads_at_32_and_64_heads_per_cta (never run yet); (2) A/B HEAD vs HEAD + the stmatrix
# epilogue for the mma.sync kernels (.dev/s32/next/stmatrix_epilogue.patch), with its GPU tests,
# on the shipped build and under SM120's register budget (SMALL rows are what SM120 runs).
# Before running: mkdir -p .dev/s33/{base,ep}; git archive HEAD | tar -x -C each of them;
#   patch .dev/s33/ep/kernels/sparse_mla_decode.cu < .dev/s32/next/stmatrix_epilogue.patch; carry [".dev/s33"]
set -uo pipefail
R=$OUT/r; mkdir -p $R/ab $R/ab120
ROOT=$PWD; export PYTHONPATH=$ROOT
B=$ROOT/.dev/s33/base; E=$ROOT/.dev/s33/ep
( cd $E && OUT=$R/ab TESTS=1 ROUNDS=2 timeout 250 bash bench/kernel_ab.sh $B $E ) > $R/ab/ab.txt 2>&1
grep -E "passed|failed" $R/ab/gpu_tests.log | tail -3; sed -n '/^shape/,$p' $R/ab/ab.txt
( cd $E && OUT=$R/ab120 TESTS=1 ROUNDS=2 NVCC_EXTRA_OLD=-DDSPARKCTL_SMALL_MIN_BLOCKS=1 NVCC_EXTRA_NEW=-DDSPARKCTL_SMALL_MIN_BLOCKS=1 timeout 250 bash bench/kernel_ab.sh $B $E ) > $R/ab120/ab.txt 2>&1
grep -E "passed|failed" $R/ab120/gpu_tests.log | tail -3; sed -n '/^shape/,$p' $R/ab120/ab.txt
cd $OUT && tar czf r.tgz r && rm -rf r
