#!/usr/bin/env bash
# session 32 (device): two WS candidates against v53, alone and together:
#   sap  = -DDSPARKCTL_WS_S_AFTER_PV=1: warpgroup 0 waits for warpgroup 1's P.V of the previous tile
#          (P-free) before issuing the next S, so that P.V stops sharing the tensor pipe and shared
#          memory with S and frees the buffer (and tile j + 2's copies) sooner;
#   rah  = -DDSPARKCTL_WS_RA_HI=1: warpgroup 0's hi pass takes P from registers (16 KB a tile less
#          shared-memory traffic);
#   both.
# Built in parallel, GPU tests on each candidate, outputs against v53 bit for bit, 3 alternating
# rounds of --short and --short --heads 64 128, then timelines (per tile) of v53, sap and both.
set -uo pipefail
A=/tmp/abn; rm -rf $A; mkdir -p $A; export PYTHONPATH=$PWD
SAP=-DDSPARKCTL_WS_S_AFTER_PV=1; RAH=-DDSPARKCTL_WS_RA_HI=1
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v53 $A/build_v53.log > /dev/null &
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_sap $A/build_sap.log $SAP > /dev/null &
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_rah $A/build_rah.log $RAH > /dev/null &
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_both $A/build_both.log $SAP $RAH > /dev/null &
for v in v53 sap both; do
  case $v in v53) F="";; sap) F="$SAP";; both) F="$SAP $RAH";; esac
  # shellcheck disable=SC2086
  timeout 150 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE $F bench/kernel_timeline.cu -o /tmp/tl_$v > $A/build_tl_$v.log 2>&1 &
done
wait
OUT=$A ROUNDS=3 TESTS=1 COMPARE=1 PREBUILT=1 timeout 450 bash bench/kernel_abn.sh v53= sap=$SAP rah=$RAH both=$SAP,$RAH \
  > $A/abn.log 2>&1
tail -60 $A/abn.log
for v in v53 sap both; do
  : > $A/timeline_$v.jsonl
  for args in "64 192 133 0 50" "64 192 133 512 25" "64 192 133 512 50" "64 128 128 1024 64" "128 128 128 1024 64"; do
    # shellcheck disable=SC2086
    timeout 60 /tmp/tl_$v $args >> $A/timeline_$v.jsonl 2>> $A/timeline_err.log
  done
done
python3 bench/ws_timeline_summary.py --tiles v53=$A/timeline_v53.jsonl sap=$A/timeline_sap.jsonl both=$A/timeline_both.jsonl | tee $A/tiles.txt
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
