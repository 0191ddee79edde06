#!/usr/bin/env bash
# v37 run 3 (device): bench/kernel_device_run.sh --short on the session's final tree (kernels =
# aad82ed's) after its change (on Hopper the sanitizer subset's racecheck runs on the WS kernel's
# rendezvous build): GPU tests, memcheck, racecheck, SM120-register-budget build, short bench.
set -uo pipefail
mkdir -p /tmp/s3
OUT=/tmp/s3 timeout 480 bash bench/kernel_device_run.sh --short 2>&1 | tee /tmp/s3/run.log | grep -vE "^\|" | tail -30
rm -f /tmp/s3/*.so; cd /tmp/s3 && tar czf $OUT/short.tgz . && ls -la $OUT
