#!/usr/bin/env bash
# A shipped kernel's full device record in one call (sessions 45-48 each wrote this as its own
# results script): the full run of the working tree's kernel (bench/kernel_device_run.sh with the
# Triton peer: GPU tests on the shipped and the SM120-register builds, sanitizers, the WS probe, the
# smoke, the bench table) into run1/, the product's GPU suite (bench/gpu_suite.sh) into suite/, then
# a second bench table into reruns/ if the call has time left. Packs $OUT/r.tgz.
#   usage (on the device): OUT=... bash bench/kernel_full_record.sh
#   SKIP_SUITE=1: no product suite (then only .dev/s30 need be carried; session 50's v75 record)
#   carry .dev/s30 (the peer) and .dev/devwheels/wheelcache (the SGLang wheel for the install test);
#   with both, run `bash bench/device_hold_results.sh out DIR` here first and `back` after.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
F=/tmp/full; rm -rf $F; mkdir -p $F/run1 $F/suite $F/reruns
t0=$(date +%s)
OUT=$F/run1 timeout 330 bash bench/kernel_device_run.sh .dev/s30/kernel_peer/flash_mla_sm120_triton.py > $F/run1/full_run.log 2>&1
echo "full run rc=$? $(( $(date +%s) - t0 )) s"
grep -E "passed|ERROR SUMMARY|RACECHECK SUMMARY|verdict|spill" $F/run1/full_run.log | head -20
grep -E "dspark|decode \| 128 \| 128\(128\) \| 1024 \| 1 " $F/run1/kernel_bench.md | head -9
if [ -z "${SKIP_SUITE:-}" ]; then
  t1=$(date +%s)
  OUT=$F/suite timeout 200 bash bench/gpu_suite.sh > $F/suite/gpu_suite.out 2>&1
  echo "suite rc=$? $(( $(date +%s) - t1 )) s"; grep "rc=" $F/suite/suite.log; tail -3 $F/suite/gpu_tests.log
  grep -E "SKIPPED|FAILED" $F/suite/gpu_tests.log | head
fi
if [ $(( $(date +%s) - t0 )) -lt 500 ]; then
  SO=/tmp/kbuild/dsparkctl_sparse_mla_sm_90a.so
  echo "second table on $SO"
  DSPARKCTL_KERNEL_SO=$SO timeout 70 python3 bench/bench_kernel.py --triton-peer .dev/s30/kernel_peer/flash_mla_sm120_triton.py \
    --json "$F/reruns/kernel_bench_r2.json" --md "$F/reruns/kernel_bench_r2.md" > "$F/reruns/bench_r2.log" 2>&1 || tail -20 "$F/reruns/bench_r2.log"
  grep -E "dspark" "$F/reruns/kernel_bench_r2.md"
fi
(cd $F && tar czf "$OUT/r.tgz" .)
echo "total $(( $(date +%s) - t0 )) s"
