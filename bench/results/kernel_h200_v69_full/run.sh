#!/usr/bin/env bash
# v69's device call (session 42, call 3): the full run of the shipped source (bench/kernel_device_run.sh
# with the Triton peer: GPU tests on the shipped and the SM120-register builds, sanitizers, the WS
# probe, the smoke, the bench table), then the same-call A/B that confirms call 2's gain: v68
# (-DDSPARKCTL_WS_Q_EARLY=0) against v69 (the default), outputs bit for bit, 4 alternating rounds of
# the --short rows and of the 64- and 128-head decode rows (more WS rows). Carry .dev/s30 (the peer).
# Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
F=/tmp/full; rm -rf $F; mkdir -p $F/run1 $F/ab
t0=$(date +%s)
OUT=$F/run1 timeout 330 bash bench/kernel_device_run.sh .dev/s30/kernel_peer/flash_mla_sm120_triton.py > $F/run1/full_run.log 2>&1
echo "full run rc=$? $(( $(date +%s) - t0 )) s"
grep -E "passed|ERROR SUMMARY|RACECHECK SUMMARY|verdict|spill" $F/run1/full_run.log | head -20
grep -E "dspark" $F/run1/kernel_bench.md | head -8
{
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v68 $F/ab/build_v68.log -DDSPARKCTL_WS_Q_EARLY=0 > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v69 $F/ab/build_v69.log > /dev/null &
  wait
}
OUT=$F/ab ROUNDS=4 COMPARE=1 PREBUILT=1 BENCH_SETS='--short;--short --heads 64 128' timeout 240 bash bench/kernel_abn.sh v68=-DDSPARKCTL_WS_Q_EARLY=0 v69= > $F/ab/abn.log 2>&1
tail -42 $F/ab/abn.log
rm -f $F/ab/*.pt; (cd $F && tar czf "$OUT/r.tgz" .)
echo "total $(( $(date +%s) - t0 )) s"
