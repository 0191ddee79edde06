#!/usr/bin/env bash
# Session 40, device call 4: the ring of 3 (run2's r3b) decided. (1) bench/kernel_abn.sh, 6 alternating
# rounds of the --short rows, v67 against r3b, no tests (run2 ran them). (2) The full device run with
# the flag on every build (KERNEL_NVCC_EXTRA): GPU tests on the shipped and SM120-register builds,
# sanitizers, the WS probe, the smoke, the bench table with the Triton peer (carry .dev/s30), so that
# it can ship on this record if (1) confirms run2. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
F=/tmp/r3c; rm -rf $F; mkdir -p $F/ab $F/full
t0=$(date +%s)
BENCH_SETS='--short' OUT=$F/ab ROUNDS=6 TESTS=0 COMPARE=0 timeout 200 bash bench/kernel_abn.sh v67= r3b=-DDSPARKCTL_WS_DH_RING3=1 > $F/ab/abn.log 2>&1
echo "abn rc=$? $(( $(date +%s) - t0 )) s"; grep -E "dspark" $F/ab/abn.log | head -8
t0=$(date +%s)
KERNEL_NVCC_EXTRA="-DDSPARKCTL_WS_DH_RING3=1" OUT=$F/full timeout 330 bash bench/kernel_device_run.sh .dev/s30/kernel_peer/flash_mla_sm120_triton.py > $F/full/full_run.log 2>&1
echo "full run rc=$? $(( $(date +%s) - t0 )) s"
grep -E "passed|ERROR SUMMARY|RACECHECK SUMMARY|verdict|spill" $F/full/full_run.log | head -20
grep -E "dspark" $F/full/kernel_bench.md | head -8
rm -f $F/*/*.pt; (cd $F && tar czf "$OUT/r.tgz" .)
