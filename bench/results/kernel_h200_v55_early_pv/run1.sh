#!/usr/bin/env bash
# session 32 (device): -DDSPARKCTL_WS_EARLY_PV=1 (warpgroup 0's P.V from registers, issued k-step
# by k-step under its P phase; warpgroup 1's lo part converted under its hi pass) against v53,
# at v53's register split and at 224 / 176 / 104 (e224). Built in parallel, GPU tests on both
# candidates, outputs against v53 bit for bit, 3 alternating rounds of --short and --short --heads
# 64 128, then the candidate's WS phase timeline. Results packed into $OUT/r.tgz.
set -uo pipefail
A=/tmp/abn; rm -rf $A; mkdir -p $A; export PYTHONPATH=$PWD
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v53 $A/build_v53.log > /dev/null &
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_epv $A/build_epv.log -DDSPARKCTL_WS_EARLY_PV=1 > /dev/null &
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_e224 $A/build_e224.log -DDSPARKCTL_WS_EARLY_PV=1 -DDSPARKCTL_WS_REGS_S=224 -DDSPARKCTL_WS_REGS_PRODUCER=104 > /dev/null &
timeout 150 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_WS_EARLY_PV=1 bench/kernel_timeline.cu -o /tmp/tl_epv > $A/build_tl.log 2>&1 &
wait
OUT=$A ROUNDS=3 TESTS=1 COMPARE=1 PREBUILT=1 timeout 420 bash bench/kernel_abn.sh v53= \
  epv=-DDSPARKCTL_WS_EARLY_PV=1 e224=-DDSPARKCTL_WS_EARLY_PV=1,-DDSPARKCTL_WS_REGS_S=224,-DDSPARKCTL_WS_REGS_PRODUCER=104 \
  > $A/abn.log 2>&1
tail -60 $A/abn.log
: > $A/timeline_epv.jsonl
for args in "64 192 133 0 50" "64 192 133 512 25" "64 192 133 512 50" "64 128 128 1024 64" "128 128 128 1024 64"; do
  # shellcheck disable=SC2086
  timeout 60 /tmp/tl_epv $args >> $A/timeline_epv.jsonl 2>> $A/timeline_err.log
done
python3 bench/ws_timeline_summary.py epv=$A/timeline_epv.jsonl
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
