#!/usr/bin/env bash
# Session 37, device call 7: the final v65 source (ws_store_unit shared by store_tile and the
# partial-tile conversion: same arithmetic, ptxas's register choices moved) against v64
# (-DDSPARKCTL_WS_TAIL16=0 of the same tree is not v64's SASS any more, so v64 is its own tree's
# build: the working tree's kernel source at 2720736 is carried as .dev/s37/head). GPU tests on
# the final build, its outputs against v64 bit for bit, one bench round each (--short).
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
A=/tmp/abn; rm -rf $A; mkdir -p $A
{
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v65 $A/build_v65.log > /dev/null &
  (cd .dev/s37/head && PYTHONPATH=$PWD timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v64 $A/build_v64.log > /dev/null) &
  wait
}
OUT=$A ROUNDS=1 TESTS=1 COMPARE=1 PREBUILT=1 BENCH_SETS=--short timeout 200 bash bench/kernel_abn.sh v64= v65= > $A/abn.log 2>&1
tail -30 $A/abn.log
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
