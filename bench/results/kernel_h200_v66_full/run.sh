#!/usr/bin/env bash
# v66's full device run in one call (session 38): bench/kernel_device_run.sh with the Triton peer
# (GPU tests on the shipped and the SM120-register builds, sanitizers, smoke, the bench table), then
# the whole of bench/gpu_suite.sh, its route / install GPU tests included: carry .dev/devwheels
# (`python bench/device_wheels.py download .dev/devwheels` here) and .dev/s30/kernel_peer.
# The candidate A/B of this change: ../kernel_h200_ws_dims_split/.
# Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1
F=/tmp/full; rm -rf $F; mkdir -p $F/run1 $F/suite
t0=$(date +%s)
PYTHONPATH=$PWD OUT=$F/run1 timeout 330 bash bench/kernel_device_run.sh .dev/s30/kernel_peer/flash_mla_sm120_triton.py > $F/run1/full_run.log 2>&1
echo "full run rc=$? $(( $(date +%s) - t0 )) s"
t1=$(date +%s)
OUT=$F/suite timeout 240 bash bench/gpu_suite.sh > $F/suite/gpu_suite.out 2>&1
echo "suite rc=$? $(( $(date +%s) - t1 )) s"; grep "rc=" $F/suite/suite.log; tail -3 $F/suite/gpu_tests.log
(cd $F && tar czf "$OUT/r.tgz" .)
echo "total $(( $(date +%s) - t0 )) s"
