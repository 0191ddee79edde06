#!/usr/bin/env bash
# Session 29, device call 4 (carry .dev/s30/kernel_peer):
#   bash bench/results/kernel_h200_v49_rolled/run1.sh
# -DDSPARKCTL_WS_ROLLED_EPILOGUE=1 (ru: the WS epilogue's row loops rolled) against v46:
# 1. next_ab.sh (GPU tests on ru, 46 bench cases bit for bit, 3 alternating rounds, WS timelines,
#    memcheck and racecheck of ru); 2. the epilogue's timeline marks of both at the 1-split DSpark
#    T = 50 and the 2-split shapes; 3. ru's GPU tests in the SM120-register build; 4. ru's WS
#    split sweep at the DSpark shapes. Every stage re-packs r.tgz, so a timeout keeps what ran.
set -uo pipefail
FL=-DDSPARKCTL_WS_ROLLED_EPILOGUE=1
R=/tmp/r; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1; SO=dsparkctl_sparse_mla_sm_90a.so
mkdir -p /tmp/marks
timeout 400 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_CLUSTER_MARKS bench/kernel_timeline.cu -o /tmp/tlm_v46 > /tmp/marks/build_v46.log 2>&1 &
timeout 400 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_CLUSTER_MARKS $FL bench/kernel_timeline.cu -o /tmp/tlm_ru > /tmp/marks/build_ru.log 2>&1 &
timeout 400 python3 bench/build_kernel.py sm_90a /tmp/kru90s /tmp/marks/build_ru90s.log -DDSPARKCTL_SMALL_MIN_BLOCKS=1 $FL > /dev/null &
ROUNDS=2 KEEP=1 SAN=ru bash bench/results/kernel_h200_v44_ldg/next_ab.sh v46= ru=$FL
wait
mkdir -p $R/marks; cp /tmp/marks/*.log $R/marks/
for v in v46 ru; do
  for sh in "64 192 133 0 50" "64 192 133 0 50 1 2" "64 192 133 512 50" "128 128 128 1024 32" "64 128 128 512 64"; do
    timeout 20 /tmp/tlm_$v $sh >> $R/marks/timeline_$v.jsonl || echo "TL FAILED $v $sh"
  done
done
python3 - $R/marks <<'PY' | tee $R/marks/marks.txt
import json, sys
from pathlib import Path
for v in ("v46", "ru"):
    p = Path(sys.argv[1]) / f"timeline_{v}.jsonl"
    for line in (p.read_text().splitlines() if p.exists() else []):
        a = json.loads(line); ph = a["phase_cycles"]
        print(v, a["H"], a["extra"], a["T"], "splits", a["splits"], "us", a["stream_us_per_call"], "both_staged", ph["ws_range_at"],
              "sync1", ph["ws_q_regs_at"], "rows_written", ph["ws_q_ready_at"], "end", ph["ws_written_at"])
PY
(cd $R && tar czf $OUT/r.tgz .)
DSPARKCTL_KERNEL_SO=/tmp/kru90s/$SO timeout 90 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider > $R/gpu_tests_ru90s.log 2>&1
echo "gpu tests ru, SM120-register build: $(grep -E '[0-9]+ (passed|failed)' $R/gpu_tests_ru90s.log | tail -1)"
(cd $R && tar czf $OUT/r.tgz .)
DSPARKCTL_KERNEL_SO=/tmp/kabn_ru/$SO timeout 90 python3 bench/plan_sweep.py --kind dspark --layout large --json $R/sweep_ru.json --md $R/sweep_ru.md > $R/sweep_ru.log 2>&1 || echo "SWEEP FAILED"
python3 -c "
import json; d = json.load(open('$R/sweep_ru.json'))
for x in d['rows']: print('ru dspark +%d T=%d auto %.2f |' % (x['extra'], x['T'], x['auto_us']), ' '.join('s%d:%.2f' % (g['splits'], g['us']) for g in x['forced']))
" | tee $R/sweep_ru.txt
rm -rf /tmp/kabn_* /tmp/kbuild_rc /tmp/kru90s; cd $R && tar czf $OUT/r.tgz .
