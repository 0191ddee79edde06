#!/usr/bin/env bash
# Session 26, device call 5 (the session's last ~7 device minutes): ncu --set full of v43 (the default
# build of 4f1c264) at 128 heads +1024 T = 64 and DSpark +512 T = 50, for the next session's analysis
# of the WS kernel after the L2 prefetch: the producer's prep (the bulk prefetches' lane-by-lane
# issue), warpgroup 1's copy loop (the bulk copies' per-lane waterfall), the conversion.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
SO=dsparkctl_sparse_mla_sm_90a.so
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/k43 $R/build.log > /dev/null || echo "BUILD FAILED"
for sh in big dspark; do
  DSPARKCTL_KERNEL_SO=/tmp/k43/$SO OUT=$R/ncu_$sh timeout 140 bash bench/kernel_ncu.sh $sh > $R/ncu_$sh.txt 2>&1
  echo "== $sh"; grep -E "^launch" $R/ncu_$sh.txt | head -4
  rm -f $R/ncu_$sh/prof.ncu-rep
done
cd $R && tar czf $OUT/r.tgz .
