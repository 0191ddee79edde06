#!/usr/bin/env bash
# Session 40's last device call, on the shipped tree (v68: DSPARKCTL_WS_DH_RING3 on by default; its sm_90a
# SASS is the full run's, bench/results/kernel_h200_ws_dh_ring3/run3/full/): the kernel's GPU tests on the default
# build, then the
# whole of bench/gpu_suite.sh with .dev/devwheels/wheelcache carried (the SGLang wheel; the rest of
# .dev/devwheels does not fit the transfer limit beside the tree). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1
F=/tmp/s40; rm -rf $F; mkdir -p $F/suite
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
