#!/usr/bin/env bash
# session 31 (device): more of the producer's registers for the WS consumers, after v53's 216 / 176 /
# 112 (warpgroup 0 / warpgroup 1 / producer) gained 0.6-3.3 us over 200 / 176 / 128. Candidates
# (no spill, no wgmma serialization in ptxas): r224 = 224 / 176 / 104, r184 = 216 / 184 / 104.
# Built in parallel, GPU tests on both, outputs against v53 bit for bit, 2 alternating rounds of
# --short and --short --heads 64 128. Results packed into $OUT/r.tgz.
set -uo pipefail
A=/tmp/abn; rm -rf $A; mkdir -p $A; export PYTHONPATH=$PWD
timeout 120 python3 bench/build_kernel.py sm_90a /tmp/kabn_v53 $A/build_v53.log > /dev/null &
timeout 120 python3 bench/build_kernel.py sm_90a /tmp/kabn_r224 $A/build_r224.log -DDSPARKCTL_WS_REGS_S=224 -DDSPARKCTL_WS_REGS_PRODUCER=104 > /dev/null &
timeout 120 python3 bench/build_kernel.py sm_90a /tmp/kabn_r184 $A/build_r184.log -DDSPARKCTL_WS_REGS_PV=184 -DDSPARKCTL_WS_REGS_PRODUCER=104 > /dev/null &
wait
OUT=$A ROUNDS=2 TESTS=1 COMPARE=1 PREBUILT=1 timeout 330 bash bench/kernel_abn.sh v53= \
  r224=-DDSPARKCTL_WS_REGS_S=224,-DDSPARKCTL_WS_REGS_PRODUCER=104 r184=-DDSPARKCTL_WS_REGS_PV=184,-DDSPARKCTL_WS_REGS_PRODUCER=104 \
  > $A/abn.log 2>&1
tail -40 $A/abn.log
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
