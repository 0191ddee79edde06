#!/usr/bin/env bash
# v38 run 1 (device): warpgroup 0 copies tile j + 2's first 32 rows right after its own P.V of tile
# j, warpgroup 1 the other 32 (v37: warpgroup 1 all 64). Same-call A/B on one tree: old =
# -DDSPARKCTL_WS_WG0_COPY_ROWS=0 (SASS-identical to v37's shipped WS kernel, checked on the CPU),
# new = the default (32); GPU tests on the new build; the 64 / 128-head decode rows and the --short
# rows (DSpark) alternated, 2 rounds; WS timelines of both; racecheck of the new WS kernel on its
# rendezvous build (probe + sanitizer subset).
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
( OUT=$R/ab TESTS=1 ROUNDS=2 NVCC_EXTRA_OLD=-DDSPARKCTL_WS_WG0_COPY_ROWS=0 BENCH_EXTRA="--heads 64 128" timeout 300 bash bench/kernel_ab.sh . ) > $R/ab.txt 2>&1
grep -E "passed|failed" $R/ab/gpu_tests.log | tail -2; sed -n '/^build/p;/^shape/,$p' $R/ab.txt
SO=$(ls /tmp/kab_new/*.so | head -1); OSO=$(ls /tmp/kab_old/*.so | head -1)
for r in 1 2; do for side in old new; do
  s=$SO; [ $side = old ] && s=$OSO
  DSPARKCTL_KERNEL_SO=$s timeout 100 python3 bench/bench_kernel.py --short --json $R/s_${side}_$r.json --md $R/s_${side}_$r.md > $R/s_${side}_$r.log 2>&1 || echo "BENCH FAILED $side $r"
done; done
python3 - $R <<'PY' | tee $R/ab_short.txt
import json, sys
from pathlib import Path
R = Path(sys.argv[1])
runs = {s: [json.loads((R / f's_{s}_{r}.json').read_text())['rows'] for r in (1, 2) if (R / f's_{s}_{r}.json').exists()] for s in ('old', 'new')}
for i, x in enumerate(runs['new'][0]):
    o = [run[i]['ours_us'] for run in runs['old']]; n = [run[i]['ours_us'] for run in runs['new']]
    print(f"{x['kind']} H={x['H']} +{x['extra']} T={x['T']} {x.get('plan')} | {' / '.join(f'{v:.2f}' for v in o)} | {' / '.join(f'{v:.2f}' for v in n)} | {min(n) - min(o):+.2f}")
PY
for v in new old; do
  x=""; [ $v = old ] && x=-DDSPARKCTL_WS_WG0_COPY_ROWS=0
  nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE $x bench/kernel_timeline.cu -o /tmp/tl_$v 2> /dev/null || echo "TL BUILD FAILED $v"
  for s in "128 128 128 1024 64" "64 192 133 512 50" "64 128 128 1024 64"; do timeout 20 /tmp/tl_$v $s >> $R/timeline_$v.jsonl; done
done
python3 - $R <<'PY' | tee $R/timeline_per_tile.txt
import json, sys
names = {'wg0_wait_full': 'ids_issued', 'wg0_s': 'ids_published', 'wg0_mask': 'q_landed', 'wg0_pfree': 'first_copy_issue', 'wg0_p': 'q_to_smem', 'wg0_pv': 'tile_landed', 'wg0_copies': 's_mma',
         'wg1_wait': 'next_copy_issue', 'wg1_pv': 's', 'wg1_copies': 'q_loads_issued', 'prod_copies': 'p', 'prod_landed': 'pv', 'prod_convert': 'epi_stage', 'prod_prep': 'epi_wait2'}
for v in ('old', 'new'):
    for line in open(f'{sys.argv[1]}/timeline_{v}.jsonl'):
        a = json.loads(line); n = a['tiles_max']
        print(v, a['H'], a['extra'], a['T'], 'us %.2f' % a['stream_us_per_call'], {k: round(a['phase_cycles'][x][0] / n) for k, x in names.items()})
PY
python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/kb_rc'), Path('$R/build_rc.log'), extra_nvcc=['-DDSPARKCTL_WS_RACECHECK_SYNC'])" > /dev/null
RSO=/tmp/kb_rc/dsparkctl_sparse_mla_sm_90a.so
DSPARKCTL_KERNEL_SO=$RSO timeout 100 compute-sanitizer --tool racecheck python3 bench/racecheck_ws_probe.py > $R/racecheck_probe.log 2>&1
echo "racecheck probe (rendezvous build): $(grep -c '^ok' $R/racecheck_probe.log) ok | $(grep SUMMARY $R/racecheck_probe.log)"
DSPARKCTL_KERNEL_SO=$RSO timeout 150 compute-sanitizer --tool racecheck python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset or routes_the_warp" > $R/racecheck_subset.log 2>&1
echo "racecheck subset (rendezvous build): $(grep -E 'SUMMARY|passed|failed' $R/racecheck_subset.log | tr '\n' ' ')"
rm -rf $R/ab/*.so; cd $R && tar czf $OUT/r.tgz .
