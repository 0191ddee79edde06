#!/usr/bin/env bash
# session 23 run 2 (device): two WS-kernel candidates as build variants of one tree, same call:
# base (v39), swap (-DDSPARKCTL_WS_RAW_SWAP: the producer's raw-row reads without the 2-way bank
# conflict), bulk (-DDSPARKCTL_WS_BULK_STORE: the fp32 partial rows leave by bulk copies);
# GPU tests on both candidates; 2 rounds of the short and the 64/128-head rows; WS timelines of
# base and swap (the producer's raw reads now timed apart, slot 20).
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=$R/abn TESTS=1 ROUNDS=2 timeout 420 bash bench/kernel_abn.sh base= swap=-DDSPARKCTL_WS_RAW_SWAP bulk=-DDSPARKCTL_WS_BULK_STORE 2>&1 | tee $R/abn.txt
for v in base swap; do
  x=""; [ $v = swap ] && x=-DDSPARKCTL_WS_RAW_SWAP
  nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE $x bench/kernel_timeline.cu -o /tmp/tl_$v 2> /dev/null || echo "TL BUILD FAILED $v"
  for s in "128 128 128 1024 64" "64 192 133 512 50" "64 192 133 512 25"; do timeout 20 /tmp/tl_$v $s >> $R/timeline_$v.jsonl; done
done
python3 - $R <<'PY' | tee $R/timeline_per_tile.txt
import json, sys
names = {'wg0_wait': 'ids_issued', 'wg0_s': 'ids_published', 'wg0_mask': 'q_landed', 'wg0_pfree': 'first_copy_issue', 'wg0_p': 'q_to_smem', 'wg0_pv': 'tile_landed', 'wg0_rest': 'dequant',
         'wg1_wait': 'next_copy_issue', 'wg1_pv': 's', 'wg1_copies': 'q_loads_issued', 'prod_copies': 'p', 'prod_landed': 'pv', 'prod_free': 'epi_wait', 'prod_convert': 'epi_stage', 'prod_prep': 'epi_wait2', 'prod_bar': 'epi_store', 'prod_rawread': 's_mma'}
for v in ('base', 'swap'):
    for line in open(f'{sys.argv[1]}/timeline_{v}.jsonl'):
        a = json.loads(line); n = a['tiles_max']
        print(v, a['H'], a['extra'], a['T'], 'us %.2f' % a['stream_us_per_call'], 'cta_med_ns', a['cta_ns_median'], 'tiles', n, {k: round(a['phase_cycles'][x][0] / n) for k, x in names.items()})
PY
rm -rf /tmp/kabn_*; cd $R && tar czf $OUT/r.tgz . && ls -la $OUT
