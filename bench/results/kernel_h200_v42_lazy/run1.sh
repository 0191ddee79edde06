#!/usr/bin/env bash
# PREPARED in session 24 for the next session's first device call (carry .dev/s30/kernel_peer: SGLang
# 0.5.23's flash_mla_sm120_triton.py, from the wheel): the full device run of the lazy-rescale
# candidate (-DDSPARKCTL_WS_LAZY_RESCALE, off by default; ../kernel_h200_v42_candidates/ has its
# A/B): every build of bench/kernel_device_run.sh with the flag (GPU tests, memcheck, racecheck on the
# WS rendezvous build, SM120-register build, full bench with the Triton peer and the foreign
# predecessor), then 2 more same-call A/B rounds against v41. If the run is clean, flip the default
# in a CPU-only commit whose sm_90a SASS equals this build's, function by function.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl 2> $R/tl_build.log &  # CPU only, beside the GPU work
OUT=$R/full KERNEL_NVCC_EXTRA=-DDSPARKCTL_WS_LAZY_RESCALE timeout 330 bash bench/kernel_device_run.sh \
  .dev/s30/kernel_peer/flash_mla_sm120_triton.py --with-predecessor > $R/full_run.log 2>&1
grep -vE "^\|" $R/full_run.log | tail -24
OUT=$R/abn TESTS= ROUNDS=2 BENCH_SETS='--short --heads 64 128' timeout 170 bash bench/kernel_abn.sh v41= lazy=-DDSPARKCTL_WS_LAZY_RESCALE 2>&1 | tee $R/abn.txt | tail -16
# the WS timeline of v41 at DSpark sizes: with v41's faster producer conversion, is Q (in shared
# memory at ~8,000 cycles in v40) now what the first tile waits for? If warpgroup 0's wait for tile 0
# is ~0, session 23's Q_FAST (kernel_h200_v41_candidates/removed_candidates.patch) is worth a re-test.
wait; [ -x /tmp/tl ] || echo "TL BUILD FAILED"
for sh in "64 192 133 0 50" "64 192 133 512 25" "128 128 128 1024 64"; do timeout 30 /tmp/tl $sh >> $R/timeline_v41.jsonl; done
python3 -c "
import json
for l in open('$R/timeline_v41.jsonl'):
    a = json.loads(l); ph = a['phase_cycles']
    print(a['H'], a['extra'], a['T'], 'us', a['stream_us_per_call'], 'q_ready', ph['ws_q_ready_at'][0], 'staged', ph['ws_staged_at'][0], 'wg0 tile wait', ph['ids_issued'][0], 'producer landed', ph['pv'][0], 'convert', ph['epi_stage'][0])
" | tee $R/timeline_v41.txt
rm -f $R/full/*.so; rm -rf /tmp/kabn_*; cd $R && tar czf $OUT/r.tgz .
