#!/usr/bin/env bash
# Session 28, device call 5: where the 2-split WS call's time goes with v45's in-kernel combine
# (default) and without it (-DDSPARKCTL_WS_CLUSTER_COMBINE=0: fp32 partials + the warp-row combine
# kernel). WS timelines (bench/kernel_timeline.cu, CONFIG 1 = LARGE, which is the WS kernel at 64
# heads on Hopper) at DSpark T = 50 forced to 1 and 2 splits, DSpark +512 T = 50 and 64 heads +512
# T = 64 (both 2 splits by the automatic plan).
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R
timeout 300 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl_cc > $R/tl_cc_build.log 2>&1 &
timeout 300 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_WS_CLUSTER_COMBINE=0 bench/kernel_timeline.cu -o /tmp/tl_nocc > $R/tl_nocc_build.log 2>&1 &
wait
for v in cc nocc; do
  for sh in "64 192 133 0 50 1 1" "64 192 133 0 50 1 2" "64 192 133 512 50" "64 128 128 512 64"; do
    timeout 20 /tmp/tl_$v $sh >> $R/timeline_$v.jsonl || echo "TIMELINE FAILED $v $sh"
  done
done
python3 - $R <<'PY' | tee $R/summary.txt
import json, sys
from pathlib import Path
r = Path(sys.argv[1])
for v in ("cc", "nocc"):
    for line in (r / f"timeline_{v}.jsonl").read_text().splitlines():
        a = json.loads(line); ph = a["phase_cycles"]
        keys = ("ws_range_at", "ws_q_regs_at", "ws_q_ready_at", "ws_staged_at", "ws_written_at")
        extra = {k: a[k] for k in a if "combine" in k}
        print(v, a["extra"], a["T"], "splits", a["splits"], "us", a["stream_us_per_call"], "main_span_ns", a["main_span_ns"],
              " ".join(f"{k}={ph[k][0]}/{ph[k][1]}" for k in keys), extra)
PY
cd $R && tar czf $OUT/r.tgz .
