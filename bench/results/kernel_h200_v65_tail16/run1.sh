#!/usr/bin/env bash
# Session 37, device call 2: the WS partial-tile candidates against v64, same call.
#   t16  = -DDSPARKCTL_WS_TAIL16=1: a tile whose live rows are all in its first 16 candidates is
#          converted by all 128 producer threads; P and P.V over its first 16 candidates only
#   t16s = -DDSPARKCTL_WS_TAIL16=2: t16 and S by m64n16k16 on such a tile
# GPU tests and a bit-for-bit comparison on both, 2 alternating bench rounds, then memcheck /
# racecheck (rendezvous build) / the WS racecheck probe / the smoke on t16s. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
A=/tmp/abn; rm -rf $A; mkdir -p $A
# shellcheck source=bench/kernel_checks.sh
. bench/kernel_checks.sh
export CHECK_TIMEOUT=150
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $A/gpu.txt 2>&1
{
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_v64 $A/build_v64.log > /dev/null &
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_t16 $A/build_t16.log -DDSPARKCTL_WS_TAIL16=1 > /dev/null &
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_t16s $A/build_t16s.log -DDSPARKCTL_WS_TAIL16=2 > /dev/null &
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_t16src $A/build_t16src.log -DDSPARKCTL_WS_TAIL16=2 -DDSPARKCTL_WS_RACECHECK_SYNC > /dev/null &
  wait
}
OUT=$A ROUNDS=2 TESTS=1 COMPARE=1 PREBUILT=1 timeout 400 bash bench/kernel_abn.sh v64= t16=-DDSPARKCTL_WS_TAIL16=1 t16s=-DDSPARKCTL_WS_TAIL16=2 > $A/abn.log 2>&1
tail -50 $A/abn.log
SO=/tmp/kabn_t16s/dsparkctl_sparse_mla_sm_90a.so; RC=/tmp/kabn_t16src/dsparkctl_sparse_mla_sm_90a.so
kernel_sanitizers "$SO" "$RC" 6 > $A/sanitizer.log 2>&1
kernel_ws_race_probe "$RC" $A/racecheck_ws.log >> $A/sanitizer.log
cat $A/sanitizer.log
kernel_smoke "$SO" $A/smoke_t16s.json
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
