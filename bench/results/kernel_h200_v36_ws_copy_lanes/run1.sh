#!/usr/bin/env bash
# v36 run 1 (device): the WS producer's bulk copies spread over its 4 warps (16 each) instead of
# 2 warps x 32; same-call A/B vs HEAD (.dev/ab_old = git archive of the v35-reverted tree) on the
# 128-head rows, all GPU tests on the new build, then the WS timeline at one shape.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
( OUT=$R/ab TESTS=1 ROUNDS=1 BENCH_EXTRA="--heads 128" timeout 200 bash bench/kernel_ab.sh .dev/ab_old ) > $R/ab.txt 2>&1
grep -E "passed|failed" $R/ab/gpu_tests.log | tail -1; sed -n '/^shape/,$p' $R/ab.txt
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl 2> /dev/null && timeout 20 /tmp/tl 128 128 128 1024 64 > $R/timeline_ws.jsonl
python3 -c "
import json; a=json.loads(open('$R/timeline_ws.jsonl').readline()); n=a['tiles_max']; k=['p','pv','epi_wait','epi_stage','ids_issued','epi_wait2','epi_store']
print('us %.2f' % a['stream_us_per_call'], {x: round(a['phase_cycles'][y][0]/n) for x, y in zip(['prod_issue_copies','prod_wait_data','prod_wait_empty','prod_convert','wg0_wait_full','prod_issue_ids','prod_issue_barrier'], k)})" | tee $R/timeline_ws_per_tile.txt
rm -rf $R/ab/*.so; cd $R && tar czf $OUT/r.tgz .
