#!/usr/bin/env bash
# v67's full device run (session 39): bench/kernel_device_run.sh with the Triton peer (GPU tests on
# the shipped and the SM120-register builds, sanitizers, the WS probe, the smoke, the bench table);
# carry .dev/s30 (the peer). The product's GPU suite ran on this session's v66 tree
# (../kernel_h200_s39_suite/); v67 changed only the halves kernel's epilogue. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1
F=/tmp/full; rm -rf $F; mkdir -p $F/run1
t0=$(date +%s)
PYTHONPATH=$PWD OUT=$F/run1 timeout 400 bash bench/kernel_device_run.sh .dev/s30/kernel_peer/flash_mla_sm120_triton.py > $F/run1/full_run.log 2>&1
echo "full run rc=$? $(( $(date +%s) - t0 )) s"
grep -E "passed|ERROR SUMMARY|RACECHECK SUMMARY|verdict|spill" $F/run1/full_run.log | head -20
grep -E "dspark" $F/run1/kernel_bench.md | head -8
(cd $F && tar czf "$OUT/r.tgz" .)
