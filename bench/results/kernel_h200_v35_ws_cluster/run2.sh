#!/usr/bin/env bash
# v35 run 2 (device): the final tree (cluster form reverted; shipped SASS = v33's): all GPU tests
# (with the new test_ws_two_head_blocks), then the WS timeline with the producer's copy issue
# split in three (timeline-only marks): ids / offsets / scale copies, the producer barrier, the
# ballot + bulk copies.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/kb'), Path('$R/build.log'))" > /dev/null || { tail -30 $R/build.log; exit 1; }
DSPARKCTL_KERNEL_SO=/tmp/kb/dsparkctl_sparse_mla_sm_90a.so timeout 150 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$?: $(tail -1 $R/gpu_tests.log)"; grep -E "^FAILED" $R/gpu_tests.log | head
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl 2> /dev/null
for a in "128 128 128 1024 64" "128 128 128 512 64" "64 192 133 512 50 6"; do timeout 30 /tmp/tl $a >> $R/timeline_ws.jsonl; done
python3 - $R <<'PY' | tee $R/timeline_ws_per_tile.txt
import json, sys
wsn = ["wg0_wait_full","wg0_S","wg0_mask_max","wg0_wait_pfree","wg0_P","wg0_PV","wg0_finish","wg1_wait","wg1_PV","prod_issue_copies","prod_wait_data","prod_wait_empty","prod_convert","prod_issue_ids","prod_issue_barrier"]
keys = ["ids_issued","ids_published","q_landed","first_copy_issue","q_to_smem","tile_landed","dequant","next_copy_issue","s","p","pv","epi_wait","epi_stage","epi_wait2","epi_store"]
for a in map(json.loads, open(f"{sys.argv[1]}/timeline_ws.jsonl")):
    n = a["tiles_max"]
    print((a["H"], a["extra"], a["T"], a["heads_per_cta"], a["splits"]), "us %.2f" % a["stream_us_per_call"], "per tile:", {x: round(a["phase_cycles"][k][0] / n) for x, k in zip(wsn, keys)})
PY
cd $R && tar czf $OUT/r.tgz .
