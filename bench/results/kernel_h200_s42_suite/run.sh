#!/usr/bin/env bash
# Session 42's last device call, on the shipped tree (v69; its sm_90a SASS is the full run's,
# bench/results/kernel_h200_v69_full/, whose GPU tests ran on it): bench/gpu_suite.sh whole, with
# .dev/devwheels/wheelcache carried (the SGLang wheel). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1
F=/tmp/s42; rm -rf $F; mkdir -p $F/suite
t1=$(date +%s)
OUT=$F/suite timeout 300 bash bench/gpu_suite.sh > $F/suite/gpu_suite.out 2>&1
echo "suite rc=$? $(( $(date +%s) - t1 )) s"; grep "rc=" $F/suite/suite.log; tail -3 $F/suite/gpu_tests.log
grep -E "SKIPPED|FAILED" $F/suite/gpu_tests.log | head
(cd $F && tar czf "$OUT/r.tgz" .)
