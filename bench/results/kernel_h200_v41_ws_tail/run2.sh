#!/usr/bin/env bash
# Session 24, device call 2: the WS kernel's tail skip (-DDSPARKCTL_WS_TAIL) against the base, same
# call: GPU tests of the tail build (the boundary test now covers the WS kernel, 16- and 8-byte
# paths), bit-for-bit comparison with the base (full-tile cases should be equal), 3 bench rounds of
# the short rows and the 64 / 128-head rows, then the WS timeline of DSpark T = 50 (+0) and +512 T = 25
# for both builds.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for v in base tail; do
  x=""; [ $v = tail ] && x=-DDSPARKCTL_WS_TAIL
  nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE $x bench/kernel_timeline.cu -o /tmp/tl_$v 2> $R/tl_build_$v.log || echo "TL BUILD FAILED $v"
done &
OUT=$R/abn TESTS=1 COMPARE=1 TEST_TIMEOUT=150 ROUNDS=3 timeout 470 bash bench/kernel_abn.sh base= tail=-DDSPARKCTL_WS_TAIL 2>&1 | tee $R/abn.txt | grep -vE "^decode H=(16|32)"
wait
for v in base tail; do for sh in "64 192 133 0 50" "64 192 133 512 25" "64 192 133 512 50"; do timeout 30 /tmp/tl_$v $sh >> $R/timeline_$v.jsonl; done; done
DSPARKCTL_KERNEL_SO=/tmp/kabn_tail/dsparkctl_sparse_mla_sm_90a.so timeout 60 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k tail_skip > $R/tail_tests.log 2>&1; tail -3 $R/tail_tests.log
python3 - $R <<'PY' | tee $R/timeline.txt
import json, sys
for v in ('base', 'tail'):
    for line in open(f'{sys.argv[1]}/timeline_{v}.jsonl'):
        a = json.loads(line); ph = a['phase_cycles']
        print(v, f"H={a['H']} +{a['extra']} T={a['T']} splits={a['splits']} us={a['stream_us_per_call']} staged={ph['ws_staged_at'][0]} written={ph['ws_written_at'][0]} cta_ns_max={a['cta_ns_max']}",
              'wg0[wait,S,mask,Pfree,P,PV]=', [ph[k][0] for k in ('ids_issued', 'ids_published', 'q_landed', 'first_copy_issue', 'q_to_smem', 'tile_landed')],
              'wg1[wait,PV]=', [ph[k][0] for k in ('next_copy_issue', 's')], 'prod[landed,convert]=', [ph[k][0] for k in ('pv', 'epi_stage')])
PY
rm -rf /tmp/kabn_* $R/abn/*.pt; cd $R && tar czf $OUT/r.tgz .
