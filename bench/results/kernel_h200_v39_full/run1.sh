#!/usr/bin/env bash
# v39 full device run (session 23): bench/kernel_device_run.sh with the Triton peer and --with-predecessor on
# the shipped v39 tree (697303e): GPU tests, memcheck, racecheck (WS rendezvous build), SM120-register
# build + its tests + memcheck, the full bench table. Logs tarred to $OUT/r.tgz.
set -uo pipefail
mkdir -p /tmp/r
OUT=/tmp/r timeout 570 bash bench/kernel_device_run.sh .dev/s30/kernel_peer/flash_mla_sm120_triton.py --with-predecessor 2>&1 | tee /tmp/r/run.log | grep -vE "^\|" | tail -40
rm -f /tmp/r/*.so; cp /tmp/r/kernel_bench.json /tmp/r/kernel_bench.md $OUT/ 2>/dev/null; cd /tmp/r && tar czf $OUT/r.tgz . && ls -la $OUT
