#!/usr/bin/env bash
# PREPARED in session 29 (no device time left to run it): what bounds the 2-split combine loop's
# ~9,000 cycles. Timeline-only builds (bench/kernel_timeline.cu, wrong outputs by design in the
# probes): p0 = the shipped combine with the marks, p1 = without the peer's loads, p2 = without the
# rows' stores, p3 = without both (-DDSPARKCTL_TL_COMBINE_PROBE, kernels/sparse_mla_decode.cu).
# ~2-3 minutes (four nvcc builds in parallel, then 5 shapes each):
#   bash bench/results/kernel_h200_v50_combine_probe/next.sh
# Marks (thread 0, cycles since entry, median CTA): slot 24 both staged, 25 the first rendezvous
# passed, 21 the rows written (p2 / p3: their sums made), 23 the second rendezvous passed.
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
python3 - $R <<'PY' | tee $R/probe.txt
import json, sys
from pathlib import Path
print("probe H extra T splits | us | staged -> rendezvous -> rows -> end (cycles) | loop span")
for v in range(4):
    p = Path(sys.argv[1]) / f"timeline_p{v}.jsonl"
    for line in (p.read_text().splitlines() if p.exists() else []):
        a = json.loads(line); ph = a["phase_cycles"]
        st, s1, rw, end = (ph[k][0] for k in ("ws_range_at", "ws_q_regs_at", "ws_q_ready_at", "ws_written_at"))
        span = rw - s1 if a["splits"] == 2 else end - st
        print(f"p{v} {a['H']} {a['extra']} {a['T']} {a['splits']} | {a['stream_us_per_call']} | {st} -> {s1} -> {rw} -> {end} | {span}")
PY
cd $R && tar czf $OUT/r.tgz .
