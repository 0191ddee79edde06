#!/usr/bin/env bash
# Session 25, device call 3: where is the WS kernel's steady state bound? Two producer warpgroups
# (../kernel_h200_v42_two_producers/) did not shorten the chain, and a producer thread's
# conversion got longer with half the work, which points at a shared pipe. ncu --set full of v42
# at 128 heads +1024 T = 64 (18-tile chains) and DSpark +512 T = 50, keeping the details and raw
# pages: shared-memory pipe, tensor pipe and L2 / DRAM utilization per launch.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
SO=dsparkctl_sparse_mla_sm_90a.so
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/k42 $R/build.log > /dev/null || echo "BUILD FAILED"
for sh in big dspark; do
  DSPARKCTL_KERNEL_SO=/tmp/k42/$SO OUT=$R/ncu_$sh timeout 200 bash bench/kernel_ncu.sh $sh > $R/ncu_$sh.txt 2>&1
  echo "== $sh"; grep -E "^launch" $R/ncu_$sh.txt | head -4
  rm -f $R/ncu_$sh/prof.ncu-rep
done
timeout 60 ncu --query-metrics --chip gh100 > $R/query_metrics.txt 2>&1
cd $R && tar czf $OUT/r.tgz .
