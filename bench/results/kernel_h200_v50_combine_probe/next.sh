#!/usr/bin/env bash
# PREPARED in session 29 (no device time left to run it): what bounds the 2-split combine loop's
# ~9,000 cycles. Timeline-only builds (bench/kernel_timeline.cu, wrong outputs by design in the
# probes): p0 = the shipped combine with the marks, p1 = without the peer's loads, p2 = without the
# rows' stores, p3 = without both (-DDSPARKCTL_TL_COMBINE_PROBE, kernels/sparse_mla_decode.cu).
# ~2-3 minutes (four nvcc builds in parallel, then 5 shapes each):
#   bash bench/results/kernel_h200_v50_combine_probe/next.sh
# Marks ([median, max] over CTAs of thread 0's cycles since entry): both_staged, sync1 (the first
# rendezvous passed), rows_written (p2 / p3: their sums made), end (the second rendezvous passed);
# the loop's span is rows_written - sync1 at the 2-split shapes (at 1 split the middle two are the
# Q marks; there end - both_staged is the write).
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R
for v in 0 1 2 3; do
  timeout 400 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_CLUSTER_MARKS -DDSPARKCTL_TL_COMBINE_PROBE=$v \
    bench/kernel_timeline.cu -o /tmp/tlp_$v > $R/build_p$v.log 2>&1 &
done
wait
for v in 0 1 2 3; do
  [ -x /tmp/tlp_$v ] || { echo "BUILD FAILED p$v"; tail -5 $R/build_p$v.log; continue; }
  for sh in "64 192 133 0 50" "64 192 133 0 50 1 2" "64 192 133 512 50" "128 128 128 1024 32" "64 128 128 512 64"; do
    timeout 20 /tmp/tlp_$v $sh >> $R/timeline_p$v.jsonl || echo "TL FAILED p$v $sh"
  done
done
python3 bench/ws_timeline_summary.py --marks p0=$R/timeline_p0.jsonl p1=$R/timeline_p1.jsonl p2=$R/timeline_p2.jsonl \
  p3=$R/timeline_p3.jsonl | tee $R/probe.txt
cd $R && tar czf $OUT/r.tgz .
