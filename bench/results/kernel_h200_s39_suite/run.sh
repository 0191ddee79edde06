#!/usr/bin/env bash
# Session 39's last device call, on the shipped tree (v66; its device code is unchanged since
# session 38's full run, bench/results/kernel_h200_v66_full/): the kernel's GPU tests on the default
# build (config 7's cases included, which session 38 added after its last GPU call), then the
# whole of bench/gpu_suite.sh with SGLang's wheels carried (.dev/devwheels: the route / install GPU
# tests, skipped in session 38's full run for want of them). Packs $OUT/r.tgz. (SUITE_TMP: its scratch
# folder; session 40's run.sh calls this one.)
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1
F=${SUITE_TMP:-/tmp/s39}; rm -rf $F; mkdir -p $F/suite
t0=$(date +%s)
PYTHONPATH=$PWD timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kdef $F/build.log > /dev/null || { echo BUILD FAILED; tail -20 $F/build.log; }
PYTHONPATH=$PWD DSPARKCTL_KERNEL_SO=/tmp/kdef/dsparkctl_sparse_mla_sm_90a.so timeout 150 python3 -m pytest tests/test_kernel_gpu.py \
  -q -p no:cacheprovider > $F/gpu_tests_default.log 2>&1
echo "kernel GPU tests rc=$? $(tail -1 $F/gpu_tests_default.log) ($(( $(date +%s) - t0 )) s)"
t1=$(date +%s)
OUT=$F/suite timeout 300 bash bench/gpu_suite.sh > $F/suite/gpu_suite.out 2>&1
echo "suite rc=$? $(( $(date +%s) - t1 )) s"; grep "rc=" $F/suite/suite.log; tail -3 $F/suite/gpu_tests.log
grep -E "SKIPPED|FAILED" $F/suite/gpu_tests.log | head
(cd $F && tar czf "$OUT/r.tgz" .)
echo "total $(( $(date +%s) - t0 )) s"
