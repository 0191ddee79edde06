#!/usr/bin/env bash
# v31c + sAlpha by tile parity: GPU tests, memcheck, racecheck on the WS build
set -uo pipefail
R=$OUT/r; mkdir -p $R
export PYTHONPATH=$PWD
python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/ws'), Path('$R/build_ws.log'), extra_nvcc=['-DDSPARKCTL_WS'])" || { tail -30 $R/build_ws.log; exit 1; }
export DSPARKCTL_KERNEL_SO=/tmp/ws/dsparkctl_sparse_mla_sm_90a.so
timeout 100 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider --maxfail=5 > $R/gpu_tests.log 2>&1; echo "tests rc=$?"; tail -1 $R/gpu_tests.log
timeout 60 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset and H128" > $R/memcheck.log 2>&1; tail -1 $R/memcheck.log
timeout 80 compute-sanitizer --tool racecheck python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset and H128" > $R/racecheck.log 2>&1; tail -1 $R/racecheck.log
grep -oE "(Write|Read) Thread.*cu:[0-9]+" $R/racecheck.log | sed -E 's/Thread \([0-9]+,0,0\).*\) in //' | sort | uniq -c | head
