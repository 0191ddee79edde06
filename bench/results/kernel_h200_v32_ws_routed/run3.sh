#!/usr/bin/env bash
# v32 run 3 (device): the WS kernel with whole-CTA epilogue barriers (the producer takes part).
# GPU tests + same-call A/B (128-head decode rows) vs -DDSPARKCTL_NO_WS, then racecheck on the
# probe (every sanitizer case, WS forced, 1 and 2 splits) and memcheck / racecheck on the subset.
set -uo pipefail
R=$OUT/r; mkdir -p $R; export PYTHONPATH=$PWD
( OUT=$R/ab TESTS=1 ROUNDS=1 NVCC_EXTRA_OLD=-DDSPARKCTL_NO_WS BENCH_EXTRA="--heads 128" timeout 260 bash bench/kernel_ab.sh . ) > $R/ab.txt 2>&1
cp $R/ab/gpu_tests.log $R/gpu_tests.log; rm -rf $R/ab
grep -E "passed|failed" $R/gpu_tests.log | tail -2; grep -E "^(FAILED|ERROR)" $R/gpu_tests.log | head; sed -n '/^shape/,$p' $R/ab.txt
SO=/tmp/kab_new/dsparkctl_sparse_mla_sm_90a.so
for i in 1 2; do DSPARKCTL_KERNEL_SO=$SO SPLITS=1,2 timeout 90 compute-sanitizer --tool racecheck --print-limit 5 python3 bench/racecheck_ws_probe.py > $R/racecheck_probe$i.log 2>&1; echo "probe $i: $(grep -c '^ok' $R/racecheck_probe$i.log) ok | $(grep SUMMARY $R/racecheck_probe$i.log)"; done
for tool in memcheck racecheck; do DSPARKCTL_KERNEL_SO=$SO timeout 150 compute-sanitizer --tool $tool python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset or routes_the_warp" > $R/$tool.log 2>&1; echo "$tool rc=$?"; grep -E "SUMMARY|passed|failed" $R/$tool.log | tail -2; done
