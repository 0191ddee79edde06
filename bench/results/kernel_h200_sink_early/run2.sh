#!/usr/bin/env bash
# Session 45, device call 4: DSPARKCTL_SINK_EARLY by part, same call, 6 alternating rounds of the
# --short rows and the 128-head decode rows: v71 (=0), b (=1: the block-per-row combine kernels only)
# and all (=7, the default: also the WS unsplit row finish and the warp-row / cluster combines; its
# sm_90a SASS is call 1's candidate's, 22 of 22). GPU tests on b and all, outputs against v71.
# Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
A=/tmp/abn; rm -rf $A; mkdir -p $A; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
t0=$(date +%s)
{
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v71 $A/build_v71.log -DDSPARKCTL_SINK_EARLY=0 > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_b $A/build_b.log -DDSPARKCTL_SINK_EARLY=1 > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_all $A/build_all.log > /dev/null &
  wait
}
echo "builds $(( $(date +%s) - t0 )) s"
OUT=$A ROUNDS=6 TESTS=1 COMPARE=1 PREBUILT=1 BENCH_SETS='--short;--short --heads 128' timeout 440 bash bench/kernel_abn.sh \
  v71=-DDSPARKCTL_SINK_EARLY=0 b=-DDSPARKCTL_SINK_EARLY=1 all= > $A/abn.log 2>&1
tail -36 $A/abn.log
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
echo "total $(( $(date +%s) - t0 )) s"
