#!/usr/bin/env bash
# PREPARED in session 23 (no device time left), for the next session's first call: the four in-tree
# candidates (all off by default; the default build's sm_90a SASS equals the tested v40's, per function)
# as build variants of one tree, GPU tests on each (a hang costs TEST_TIMEOUT), a bit-for-bit comparison
# of each with the base (bench/compare_builds.py: all four claim unchanged outputs), then one round of
# the short rows and the 64 / 128-head rows (~7 minutes; more rounds for the winners in a second call); then the WS
# prologue timeline of base and qfast (the instruction-cache hypothesis).
#   qfast   -DDSPARKCTL_WS_Q_FAST                  the WS consumers' common-case Q conversion in its own short loop
#   qearly  -DDSPARKCTL_WS_Q_EARLY                 the WS consumers' Q loads before the split's tile range
#   rpb4    -DDSPARKCTL_COMBINE_ROWS_PER_BLOCK=4   4 (token, head) rows per combine block on large grids
#   clus    -DDSPARKCTL_WS_SPLIT_CLUSTER           the WS kernel's 2-4 splits as a cluster, reduced over DSMEM (no combine)
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for v in base qfast; do  # the WS prologue's marks (slots 21-25) with and without Q_FAST, built beside the variants
  x=""; [ $v = qfast ] && x=-DDSPARKCTL_WS_Q_FAST
  nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE $x bench/kernel_timeline.cu -o /tmp/tl_$v 2> $R/tl_build_$v.log || echo "TL BUILD FAILED $v"
done &
OUT=$R/abn TESTS=1 COMPARE=1 TEST_TIMEOUT=150 ROUNDS=1 timeout 480 bash bench/kernel_abn.sh base= qfast=-DDSPARKCTL_WS_Q_FAST \
  qearly=-DDSPARKCTL_WS_Q_EARLY rpb4=-DDSPARKCTL_COMBINE_ROWS_PER_BLOCK=4 clus=-DDSPARKCTL_WS_SPLIT_CLUSTER 2>&1 | tee $R/abn.txt | grep -vE "^(dspark|decode) H=(16|32)"
wait
for v in base qfast; do for sh in "64 192 133 0 50" "64 192 133 512 25" "128 128 128 1024 64"; do timeout 30 /tmp/tl_$v $sh >> $R/timeline_$v.jsonl; done; done
python3 - $R <<'PY' | tee $R/prologue.txt
import json, sys
print('build | shape | range known | Q in registers | Q in smem | rows staged | rows written (cycles since entry, median CTA) | us/call')
for v in ('base', 'qfast'):
    for line in open(f'{sys.argv[1]}/timeline_{v}.jsonl'):
        a = json.loads(line); ph = a['phase_cycles']
        print(f"{v} | H={a['H']} +{a['extra']} T={a['T']} | " + ' | '.join(f"{ph[k][0]:.0f}" for k in ('ws_range_at', 'ws_q_regs_at', 'ws_q_ready_at', 'ws_staged_at', 'ws_written_at')) + f" | {a['stream_us_per_call']}")
PY
rm -rf /tmp/kabn_* $R/abn/*.pt; cd $R && tar czf $OUT/r.tgz .
