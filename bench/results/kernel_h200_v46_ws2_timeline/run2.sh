#!/usr/bin/env bash
# Session 28, device call 7: where the ~12,000 cycles of v46's 2-split in-kernel combine go. A
# timeline build with -DDSPARKCTL_TL_CLUSTER_MARKS records, in slots 24 / 25 (printed as
# ws_range_at / ws_q_regs_at), thread 0's cycles when both warpgroups have staged (after the CTA
# barrier) and when the first cluster rendezvous has passed; ws_staged_at is warpgroup 0's staging
# done, ws_written_at the second rendezvous passed.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R
timeout 300 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_CLUSTER_MARKS bench/kernel_timeline.cu -o /tmp/tlm > $R/tlm_build.log 2>&1
for sh in "64 192 133 0 50 1 2" "64 192 133 512 50" "128 128 128 1024 32" "64 128 128 512 64"; do
  timeout 20 /tmp/tlm $sh >> $R/timeline_marks.jsonl || echo "TL FAILED $sh"
done
python3 - $R <<'PY' | tee $R/marks.txt
import json, sys
from pathlib import Path
for line in (Path(sys.argv[1]) / "timeline_marks.jsonl").read_text().splitlines():
    a = json.loads(line); ph = a["phase_cycles"]
    print(a["H"], a["extra"], a["T"], "splits", a["splits"], "us", a["stream_us_per_call"],
          "wg0_staged", ph["ws_staged_at"], "both_staged", ph["ws_range_at"], "cluster_sync1", ph["ws_q_regs_at"], "written", ph["ws_written_at"])
PY
cd $R && tar czf $OUT/r.tgz .
