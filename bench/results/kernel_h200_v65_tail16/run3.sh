#!/usr/bin/env bash
# Session 37, device call 4: the two forms of the WS partial-tile path (-DDSPARKCTL_WS_TAIL16=1, no
# mask skip, no S change) against v64, same call, 3 alternating rounds, GPU tests and bit-for-bit
# comparisons: tA = its P.V cut short by a break in the full tiles' loop (run 1's t16), tC = the
# tail's P.V as a sequence of its own (run 2's t16 without its mask skip). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
A=/tmp/abn; rm -rf $A; mkdir -p $A
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $A/gpu.txt 2>&1
{
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_v64 $A/build_v64.log > /dev/null &
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_tA $A/build_tA.log -DDSPARKCTL_WS_TAIL16=1 -DDSPARKCTL_WS_TAIL16_PV_BREAK=1 > /dev/null &
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_tC $A/build_tC.log -DDSPARKCTL_WS_TAIL16=1 > /dev/null &
  wait
}
OUT=$A ROUNDS=3 TESTS=1 COMPARE=1 PREBUILT=1 timeout 420 bash bench/kernel_abn.sh v64= tA=-DDSPARKCTL_WS_TAIL16=1,-DDSPARKCTL_WS_TAIL16_PV_BREAK=1 tC=-DDSPARKCTL_WS_TAIL16=1 > $A/abn.log 2>&1
tail -42 $A/abn.log
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
