#!/usr/bin/env bash
# Session 25, device call 7 (the session's last ~5 minutes, so no GPU tests: bit-for-bit compare
# only): the bulk L2 prefetch again, its rows now prepped by lanes 0-15 of each of the four producer
# warps (-DDSPARKCTL_WS_L2_PREFETCH=1), so a warp issues 16 bulk prefetches a tile instead of 32.
# Same-call A/B against v42 and the line prefetch (=128), 2 rounds of the 64/128-head rows, and the
# timeline of the new form at 128 heads +1024 T = 64.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R/abn; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 bench/build_kernel.py sm_90a /tmp/kabn_v42 $R/abn/build_v42.log > /dev/null &
python3 bench/build_kernel.py sm_90a /tmp/kabn_pfb $R/abn/build_pfb.log -DDSPARKCTL_WS_L2_PREFETCH=1 > /dev/null &
python3 bench/build_kernel.py sm_90a /tmp/kabn_pfl $R/abn/build_pfl.log -DDSPARKCTL_WS_L2_PREFETCH=128 > /dev/null &
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_WS_L2_PREFETCH=1 bench/kernel_timeline.cu -o /tmp/tl_pfb 2> $R/tl_build_pfb.log &
wait
OUT=$R/abn PREBUILT=1 TESTS= COMPARE=1 ROUNDS=2 BENCH_SETS='--short --heads 64 128' timeout 150 bash bench/kernel_abn.sh v42= pfb=-DDSPARKCTL_WS_L2_PREFETCH=1 \
  pfl=-DDSPARKCTL_WS_L2_PREFETCH=128 2>&1 | tee $R/abn.txt | tail -18
for sh in "128 128 128 1024 64"; do timeout 15 /tmp/tl_pfb $sh >> $R/timeline_pfb.jsonl; done
python3 -c "
import json
for l in open('$R/timeline_pfb.jsonl'):
    a = json.loads(l); ph = a['phase_cycles']
    print('pfb', a['H'], a['extra'], a['T'], 'us', a['stream_us_per_call'], 'wg0 tile wait', ph['ids_issued'][0], 'landed', ph['pv'][0], 'raw reads', ph['s_mma'][0], 'convert', ph['epi_stage'][0], 'prep', ph['epi_wait2'][0])
" | tee $R/summary.txt
rm -rf /tmp/kabn_* $R/abn/*.pt; cd $R && tar czf $OUT/r.tgz .
