#!/usr/bin/env bash
# Session 29, device call 2 (carry .dev/s30/kernel_peer):
#   bash bench/results/kernel_h200_v49_l2_combine/run1.sh
# 1. A/B/N against v46 (bench/results/kernel_h200_v44_ldg/next_ab.sh: GPU tests on each candidate,
#    46 bench cases bit for bit, 3 alternating rounds, WS timelines, memcheck and racecheck of l2):
#    l2 = -DDSPARKCTL_WS_COMBINE_L2=1 (the 2-split combine's exchange through L2), qe =
#    -DDSPARKCTL_WS_Q_EARLY=1 (the WS consumers' Q loads before the range's length loads);
# 2. the combine's timeline marks of v46 and l2 at the 2-split shapes (slot 24 both staged, 25 the
#    (first) rendezvous passed, 21 the rows written, 23 the end);
# 3. the WS kernel forced at each split count at the DSpark shapes, v46 and l2 (plan_sweep.py).
set -uo pipefail
KEEP=1 SAN=l2 bash bench/results/kernel_h200_v44_ldg/next_ab.sh v46= l2=-DDSPARKCTL_WS_COMBINE_L2=1 qe=-DDSPARKCTL_WS_Q_EARLY=1
R=/tmp/r; mkdir -p $R/marks; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_CLUSTER_MARKS bench/kernel_timeline.cu -o /tmp/tlm_v46 > $R/marks/build_v46.log 2>&1 &
timeout 300 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_CLUSTER_MARKS -DDSPARKCTL_WS_COMBINE_L2=1 bench/kernel_timeline.cu -o /tmp/tlm_l2 > $R/marks/build_l2.log 2>&1 &
wait
for v in v46 l2; do
  for sh in "64 192 133 0 50 1 2" "64 192 133 0 25 1 2" "64 192 133 512 50" "128 128 128 1024 32" "64 128 128 512 64"; do
    timeout 20 /tmp/tlm_$v $sh >> $R/marks/timeline_$v.jsonl || echo "TL FAILED $v $sh"
  done
done
python3 - $R/marks <<'PY' | tee $R/marks/marks.txt
import json, sys
from pathlib import Path
for v in ("v46", "l2"):
    p = Path(sys.argv[1]) / f"timeline_{v}.jsonl"
    for line in (p.read_text().splitlines() if p.exists() else []):
        a = json.loads(line); ph = a["phase_cycles"]
        print(v, a["H"], a["extra"], a["T"], "splits", a["splits"], "us", a["stream_us_per_call"], "both_staged", ph["ws_range_at"],
              "sync1", ph["ws_q_regs_at"], "rows_written", ph["ws_q_ready_at"], "end", ph["ws_written_at"])
PY
(cd $R && tar czf $OUT/r.tgz .)
for v in v46 l2; do
  DSPARKCTL_KERNEL_SO=/tmp/kabn_$v/dsparkctl_sparse_mla_sm_90a.so timeout 90 python3 bench/plan_sweep.py --kind dspark --layout large \
    --json $R/sweep_$v.json --md $R/sweep_$v.md > $R/sweep_$v.log 2>&1 || echo "SWEEP FAILED $v"
  python3 -c "
import json; d = json.load(open('$R/sweep_$v.json'))
for x in d['rows']: print('$v dspark +%d T=%d auto %.2f |' % (x['extra'], x['T'], x['auto_us']), ' '.join('s%d:%.2f' % (g['splits'], g['us']) for g in x['forced']))
" | tee $R/sweep_$v.txt
done
rm -rf /tmp/kabn_* /tmp/kbuild_rc; cd $R && tar czf $OUT/r.tgz .
