#!/usr/bin/env bash
# v37 run 2 (device): the full device run of the v37 tree (warpgroup 1 issues the WS copies of
# tiles 2..; the plan routes every 64-head LARGE plan to the WS kernel): GPU tests on the shipped
# and SM120-register-budget builds, memcheck, racecheck (the WS kernel on its rendezvous build),
# and the full bench with the Triton peer and the foreign predecessor.
set -uo pipefail
mkdir -p /tmp/full
OUT=/tmp/full timeout 540 bash bench/kernel_device_run.sh .dev/s30/kernel_peer/flash_mla_sm120_triton.py --with-predecessor 2>&1 | tee /tmp/full/run.log | grep -vE "^\|" | tail -40
cd /tmp/full && tar czf $OUT/full.tgz . && ls -la $OUT
