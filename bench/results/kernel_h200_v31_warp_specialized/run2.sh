#!/usr/bin/env bash
# v31 warp-specialized 64x64 kernel: build, smoke, A/B vs HEAD (short rows + 64/128-head decode rows)
set -uo pipefail
R=$OUT/r; mkdir -p $R
ROOT=$PWD; export PYTHONPATH=$ROOT
ARCH=sm_90a
python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('$ARCH', Path('/tmp/ws'), Path('$R/build_ws.log'), extra_nvcc=['-DDSPARKCTL_WS'])" || { tail -30 $R/build_ws.log; exit 1; }
grep -E "ws_kernel" -A2 $R/build_ws.log | grep -E "registers|spill" | head -4
SO=/tmp/ws/dsparkctl_sparse_mla_$ARCH.so
DSPARKCTL_KERNEL_SO=$SO timeout 120 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider --maxfail=3 -k "H64 or H128 or narrow" > $R/smoke.log 2>&1
echo "smoke rc=$?"; tail -15 $R/smoke.log
grep -qE " passed" $R/smoke.log && ! grep -qE "failed|error" $R/smoke.log || { cd $OUT && tar czf r.tgz r; exit 0; }
( OUT=$R/ab TESTS=1 ROUNDS=2 NVCC_EXTRA_NEW=-DDSPARKCTL_WS timeout 300 bash bench/kernel_ab.sh .dev/s33/base ) > $R/ab.txt 2>&1
grep -E "passed|failed" $R/ab/gpu_tests.log | tail -2; sed -n '/^shape/,$p' $R/ab.txt
( OUT=$R/ab2 ROUNDS=1 NVCC_EXTRA_NEW=-DDSPARKCTL_WS BENCH_EXTRA="--heads 64 128" timeout 200 bash bench/kernel_ab.sh .dev/s33/base ) > $R/ab2.txt 2>&1
sed -n '/^shape/,$p' $R/ab2.txt
cd $OUT && tar czf r.tgz r
