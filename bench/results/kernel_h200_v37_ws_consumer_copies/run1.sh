#!/usr/bin/env bash
# v37 run 1 (device): warpgroup 1 issues the WS kernel's bulk copies of tiles 2.. (the producer
# only preps offsets and converts). GPU tests on the new build, same-call A/B vs HEAD
# (.dev/ab_old = git archive of 7d72b76) on the 128-head rows, WS timelines (new and
# -DDSPARKCTL_WS_PRODUCER_COPIES), then the WS layout forced vs the automatic plans at 64 heads
# and DSpark with the new build (the plan rule's data).
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
( OUT=$R/ab TESTS=1 ROUNDS=2 BENCH_EXTRA="--heads 128" timeout 330 bash bench/kernel_ab.sh .dev/ab_old ) > $R/ab.txt 2>&1
grep -E "passed|failed" $R/ab/gpu_tests.log | tail -3; sed -n '/^build/p;/^shape/,$p' $R/ab.txt
for v in new old; do
  x=""; [ $v = old ] && x=-DDSPARKCTL_WS_PRODUCER_COPIES
  nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE $x bench/kernel_timeline.cu -o /tmp/tl_$v 2> /dev/null || echo "TL BUILD FAILED $v"
  for s in "128 128 128 1024 64" "64 192 133 512 50 6" "64 128 128 1024 64 6"; do timeout 20 /tmp/tl_$v $s >> $R/timeline_$v.jsonl; done
done
python3 - $R <<'PY' | tee $R/timeline_per_tile.txt
import json, sys
names = {'wg0_wait_full': 'ids_issued', 'wg0_s': 'ids_published', 'wg0_mask': 'q_landed', 'wg0_pfree': 'first_copy_issue', 'wg0_p': 'q_to_smem', 'wg0_pv': 'tile_landed',
         'wg1_wait': 'next_copy_issue', 'wg1_pv': 's', 'wg1_copies': 'q_loads_issued', 'prod_copies': 'p', 'prod_landed': 'pv', 'prod_buf_free': 'epi_wait', 'prod_convert': 'epi_stage', 'prod_prep': 'epi_wait2', 'prod_barrier': 'epi_store'}
for v in ('old', 'new'):
    for line in open(f'{sys.argv[1]}/timeline_{v}.jsonl'):
        a = json.loads(line); n = a['tiles_max']
        print(v, a['H'], a['extra'], a['T'], 'cfg', a['config'], 'us %.2f' % a['stream_us_per_call'], {k: round(a['phase_cycles'][x][0] / n) for k, x in names.items()})
PY
SO=$(ls /tmp/kab_new/*.so | head -1); OSO=$(ls /tmp/kab_old/*.so | head -1)
for r in 1 2; do
  for side in auto ws; do
    x=""; [ $side = ws ] && x="--config large_ws"
    DSPARKCTL_KERNEL_SO=$SO timeout 120 python3 bench/bench_kernel.py --short $x --json $R/f_${side}_$r.json --md $R/f_${side}_$r.md > $R/f_${side}_$r.log 2>&1 || echo "BENCH FAILED $side $r"
    DSPARKCTL_KERNEL_SO=$SO timeout 120 python3 bench/bench_kernel.py --heads 64 $x --no-ref --json $R/g_${side}_$r.json --md $R/g_${side}_$r.md > $R/g_${side}_$r.log 2>&1 || echo "BENCH FAILED g $side $r"
  done
done
python3 - $R <<'PY' | tee $R/forced_ws.txt
import json, sys
from pathlib import Path
R = Path(sys.argv[1])
for pre in ('f', 'g'):
    runs = {s: [json.loads((R / f'{pre}_{s}_{r}.json').read_text())['rows'] for r in (1, 2) if (R / f'{pre}_{s}_{r}.json').exists()] for s in ('auto', 'ws')}
    if not runs['auto'] or not runs['ws']: continue
    for i, x in enumerate(runs['auto'][0]):
        a = [run[i]['ours_us'] for run in runs['auto']]; w = [run[i]['ours_us'] for run in runs['ws']]
        print(f"{x['kind']} H={x['H']} +{x['extra']} T={x['T']} | auto {x.get('plan')} {' / '.join(f'{v:.2f}' for v in a)} | ws {' / '.join(f'{v:.2f}' for v in w)} | {min(w) - min(a):+.2f}")
PY
rm -rf $R/ab/*.so; cd $R && tar czf $OUT/r.tgz .
