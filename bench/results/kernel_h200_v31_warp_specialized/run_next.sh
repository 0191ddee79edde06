#!/usr/bin/env bash
# Prepared in session 19 (not run: no device time left). v31d = the opt-in WS kernel with one bulk
# copy per candidate row (next_bulk_producer.patch here, compile-checked, no spills).
# Before running: mkdir -p .dev/s35/{base,bulk}; git archive HEAD | tar -x -C each;
#   (cd .dev/s35/bulk && patch -p1 < ../../../bench/results/kernel_h200_v31_warp_specialized/next_bulk_producer.patch); carry [".dev/s35"]
set -uo pipefail
R=$OUT/r; mkdir -p $R; export PYTHONPATH=$PWD
B=$PWD/.dev/s35/base; N=$PWD/.dev/s35/bulk
(cd $N && PYTHONPATH=$N python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/bulk'), Path('$R/build.log'), extra_nvcc=['-DDSPARKCTL_WS'])") || { tail -30 $R/build.log; exit 1; }
(cd $N && DSPARKCTL_KERNEL_SO=/tmp/bulk/dsparkctl_sparse_mla_sm_90a.so PYTHONPATH=$N timeout 90 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider --maxfail=3 -k "H64 or H128 or narrow") > $R/smoke.log 2>&1; echo "smoke rc=$?"; tail -2 $R/smoke.log
grep -qE " passed" $R/smoke.log && ! grep -qE "failed|error" $R/smoke.log || exit 0
# same call: v30 (HEAD default) vs HEAD's opt-in WS (in-place cp.async) vs the bulk form, decode 64/128-head rows + short rows
( cd $N && OUT=$R/ab_bulk TESTS=1 ROUNDS=2 NVCC_EXTRA_NEW=-DDSPARKCTL_WS timeout 240 bash bench/kernel_ab.sh $B ) > $R/ab_bulk.txt 2>&1
grep -E "passed|failed" $R/ab_bulk/gpu_tests.log | tail -1; sed -n '/^shape/,$p' $R/ab_bulk.txt | grep -E "shape|\+512 T=(25|50)"
( cd $N && OUT=$R/ab_heads ROUNDS=1 NVCC_EXTRA_NEW=-DDSPARKCTL_WS BENCH_EXTRA="--heads 64 128" timeout 200 bash bench/kernel_ab.sh $B ) > $R/ab_heads.txt 2>&1
sed -n '/^shape/,$p' $R/ab_heads.txt
cd $N && for tool in memcheck racecheck; do DSPARKCTL_KERNEL_SO=/tmp/bulk/dsparkctl_sparse_mla_sm_90a.so PYTHONPATH=$N timeout 90 compute-sanitizer --tool $tool python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset and H128" 2>&1 | tail -1; done
