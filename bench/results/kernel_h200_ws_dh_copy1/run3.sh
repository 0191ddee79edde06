#!/usr/bin/env bash
# Session 44, device call 6 (~4 minutes): v71 (DSPARKCTL_WS_DH_COPY1 on by default: call 1's k1 halves
# kernel, SASS for SASS, on v70) against v70 (-DDSPARKCTL_WS_DH_COPY1=0, v70's SASS, 22 of 22): GPU tests
# on v71, outputs bit for bit, 8 alternating rounds of the --short rows, then the smoke on v71. The
# sanitizers ran on the same halves kernel in call 1 (run1.sh) and on v70's other kernels in call 3
# (../kernel_h200_v70_full/). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
A=/tmp/abn; rm -rf $A; mkdir -p $A
# shellcheck source=bench/kernel_checks.sh
. bench/kernel_checks.sh
export CHECK_TIMEOUT=60
{
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v70 $A/build_v70.log -DDSPARKCTL_WS_DH_COPY1=0 > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v71 $A/build_v71.log > /dev/null &
  wait
}
BENCH_SETS='--short' OUT=$A ROUNDS=8 TESTS=1 COMPARE=1 PREBUILT=1 timeout 250 bash bench/kernel_abn.sh v70=-DDSPARKCTL_WS_DH_COPY1=0 v71= > $A/abn.log 2>&1
tail -26 $A/abn.log
kernel_smoke /tmp/kabn_v71/dsparkctl_sparse_mla_sm_90a.so $A/smoke_v71.json
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
