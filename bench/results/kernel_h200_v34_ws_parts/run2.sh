#!/usr/bin/env bash
# v34 run 2 (device): phase timelines of the shipped WS kernel (HEAD, one barrier a tile) at the
# shapes it runs (128 heads, chains) and forced (config 6) at 64 heads and DSpark +512: which role
# bounds a tile now that the producer copies each row with one bulk copy.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl || exit 1
while read -r args; do /tmp/tl $args >> $R/timeline_ws.jsonl; done <<'SHAPES'
128 128 128 1024 64
128 128 128 1024 32
128 128 128 512 64
64 128 128 1024 64 6
64 128 128 512 64 6
64 192 133 512 50 6
64 192 133 512 25 6
SHAPES
python3 - $R <<'PY' | tee $R/timeline_ws_per_tile.txt
import json, sys
r = sys.argv[1]
wsn = ["wg0_wait_full","wg0_S","wg0_mask_max","wg0_wait_pfree","wg0_P","wg0_PV","wg0_finish","wg1_wait","wg1_PV","prod_issue","prod_wait_data","prod_wait_empty","prod_convert"]
keys = ["ids_issued","ids_published","q_landed","first_copy_issue","q_to_smem","tile_landed","dequant","next_copy_issue","s","p","pv","epi_wait","epi_stage"]
for a in map(json.loads, open(f"{r}/timeline_ws.jsonl")):
    n = a["tiles_max"]
    print((a["H"], a["valid"], a["extra"], a["T"], a["heads_per_cta"], a["splits"]), "us %.2f" % a["stream_us_per_call"], "tiles", n, "per tile (median CTA):", {x: round(a["phase_cycles"][k][0] / n) for x, k in zip(wsn, keys)})
PY
cd $R && tar czf $OUT/r.tgz .
