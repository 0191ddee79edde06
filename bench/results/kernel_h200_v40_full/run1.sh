#!/usr/bin/env bash
# session 23 run 7 (device): the full device run on the v40 tree (kernels = v39's SASS, plan v40):
# bench/kernel_device_run.sh with the Triton peer and --with-predecessor (GPU tests, memcheck,
# racecheck on the WS rendezvous build, SM120-register build + tests + memcheck, full bench table),
# then the WS prologue timeline (slots 24-25: the split's tile range known, Q's rows in registers).
set -uo pipefail
mkdir -p /tmp/r
OUT=/tmp/r timeout 400 bash bench/kernel_device_run.sh .dev/s30/kernel_peer/flash_mla_sm120_triton.py --with-predecessor 2>&1 | tee /tmp/r/run.log | grep -vE "^\|" | tail -25
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl 2> /tmp/r/tl_build.log || echo TL BUILD FAILED
for s in "64 192 133 0 50" "64 192 133 512 25" "64 192 133 512 50" "128 128 128 1024 64"; do timeout 30 /tmp/tl $s >> /tmp/r/timeline.jsonl; done
python3 - <<'PY' | tee /tmp/r/prologue.txt
import json
print('shape | CTAs | range known | Q in registers | Q in smem (wg0 loop starts) | rows staged | rows written (cycles since entry, median CTA)')
for line in open('/tmp/r/timeline.jsonl'):
    a = json.loads(line); ph = a['phase_cycles']
    print(f"H={a['H']} +{a['extra']} T={a['T']} | {a['ctas']} | " + ' | '.join(f"{ph[k][0]:.0f}" for k in ('ws_range_at', 'ws_q_regs_at', 'ws_q_ready_at', 'ws_staged_at', 'ws_written_at')))
PY
rm -f /tmp/r/*.so; cp /tmp/r/kernel_bench.json /tmp/r/kernel_bench.md $OUT/ 2>/dev/null; cd /tmp/r && tar czf $OUT/r.tgz . && ls $OUT
