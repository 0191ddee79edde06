#!/usr/bin/env bash
# Session 24, device call 6 (the last ~4 minutes of device time): lazy rescale vs v41 (the cleaned
# tree, whose SASS equals v41's), memcheck on the lazy build's sanitizer subset, then 3 more bench
# rounds of the 64 / 128-head rows (where the WS kernel runs its longest chains).
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R/abn; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for v in v41: lazy:-DDSPARKCTL_WS_LAZY_RESCALE; do
  n=${v%%:*}; f=${v#*:}
  python3 -c "import sys; from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/kabn_$n'), Path('$R/abn/build_$n.log'), extra_nvcc=[x for x in sys.argv[1].split(',') if x])" "$f" &
done
wait
DSPARKCTL_KERNEL_SO=/tmp/kabn_lazy/dsparkctl_sparse_mla_sm_90a.so timeout 60 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset" > $R/memcheck_lazy.log 2>&1; tail -3 $R/memcheck_lazy.log
OUT=$R/abn PREBUILT=1 ROUNDS=3 BENCH_SETS='--short --heads 64 128' timeout 110 bash bench/kernel_abn.sh v41= lazy=-DDSPARKCTL_WS_LAZY_RESCALE 2>&1 | tee $R/abn.txt | tail -14
cd $R && tar czf $OUT/r.tgz .
