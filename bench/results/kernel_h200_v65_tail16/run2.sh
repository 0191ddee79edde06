#!/usr/bin/env bash
# Session 37, device call 3: the restructured WS partial-tile candidates against v64, same call.
#   t16  = -DDSPARKCTL_WS_TAIL16=1 (P.V as a sequence of its own, mask skip): a tile whose live rows are all in its first 16 candidates is
#          converted by all 128 producer threads; P, the mask and P.V over its first 16 candidates only
#   t16s = -DDSPARKCTL_WS_TAIL16=2: t16 and S by two m64n16k16 chains on such a tile (not bit for bit)
# GPU tests and a bit-for-bit comparison on both, 3 alternating bench rounds, then memcheck /
# racecheck (rendezvous build) / the WS racecheck probe / the smoke on both. Packs $OUT/r.tgz.
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
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_t16rc $A/build_t16rc.log -DDSPARKCTL_WS_TAIL16=1 -DDSPARKCTL_WS_RACECHECK_SYNC > /dev/null &
  wait
}
OUT=$A ROUNDS=3 TESTS=1 COMPARE=1 PREBUILT=1 timeout 400 bash bench/kernel_abn.sh v64= t16=-DDSPARKCTL_WS_TAIL16=1 t16s=-DDSPARKCTL_WS_TAIL16=2 > $A/abn.log 2>&1
tail -50 $A/abn.log
for v in t16 t16s; do
  SO=/tmp/kabn_$v/dsparkctl_sparse_mla_sm_90a.so; RC=/tmp/kabn_${v}rc/dsparkctl_sparse_mla_sm_90a.so
  kernel_sanitizers "$SO" "$RC" 4 > $A/sanitizer_$v.log 2>&1
  kernel_ws_race_probe "$RC" $A/racecheck_ws_$v.log >> $A/sanitizer_$v.log
  cat $A/sanitizer_$v.log
  kernel_smoke "$SO" $A/smoke_$v.json
done
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
