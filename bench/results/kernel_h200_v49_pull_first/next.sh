#!/usr/bin/env bash
# PREPARED in session 28 (no device time left to run it; carry .dev/s30/kernel_peer):
#   bash bench/results/kernel_h200_v49_pull_first/next.sh
# 1. the A/B of -DDSPARKCTL_WS_COMBINE_PULL_FIRST=1 against v46 (bench/results/kernel_h200_v44_ldg/
#    next_ab.sh: GPU tests on both, 46 bench cases bit for bit, 3 alternating rounds, WS timelines,
#    memcheck and racecheck of the candidate), ~5 minutes;
# 2. then the combine's timeline marks (-DDSPARKCTL_TL_CLUSTER_MARKS: slot 24 both warpgroups
#    staged, 25 the first cluster rendezvous passed, 21 the rows written (v46) / the peer's rows
#    copied (candidate), 23 the second rendezvous passed (v46) / the rows written (candidate)) on
#    both builds at the 2-split shapes, ~1.5 minutes; results under /tmp/r/marks, in the same r.tgz.
set -uo pipefail
SAN=pf bash bench/results/kernel_h200_v44_ldg/next_ab.sh v46= pf=-DDSPARKCTL_WS_COMBINE_PULL_FIRST=1
R=/tmp/r; mkdir -p $R/marks
timeout 300 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_CLUSTER_MARKS bench/kernel_timeline.cu -o /tmp/tlm_v46 > $R/marks/build_v46.log 2>&1 &
timeout 300 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_CLUSTER_MARKS -DDSPARKCTL_WS_COMBINE_PULL_FIRST=1 bench/kernel_timeline.cu -o /tmp/tlm_pf > $R/marks/build_pf.log 2>&1 &
wait
for v in v46 pf; do
  for sh in "64 192 133 0 50 1 2" "64 192 133 512 50" "128 128 128 1024 32" "64 128 128 512 64"; do
    timeout 20 /tmp/tlm_$v $sh >> $R/marks/timeline_$v.jsonl || echo "TL FAILED $v $sh"
  done
done
python3 - $R/marks <<'PY' | tee $R/marks/marks.txt
import json, sys
from pathlib import Path
for v in ("v46", "pf"):
    p = Path(sys.argv[1]) / f"timeline_{v}.jsonl"
    for line in (p.read_text().splitlines() if p.exists() else []):
        a = json.loads(line); ph = a["phase_cycles"]
        print(v, a["H"], a["extra"], a["T"], "splits", a["splits"], "us", a["stream_us_per_call"], "both_staged", ph["ws_range_at"],
              "sync1", ph["ws_q_regs_at"], "loop_or_copy_done", ph["ws_q_ready_at"], "end", ph["ws_written_at"])
PY
cd $R && tar czf $OUT/r.tgz .
