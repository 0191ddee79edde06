#!/usr/bin/env bash
# v31 WS kernel: phase timelines (WS build vs default build) for the bench shapes
set -uo pipefail
R=$OUT/r; mkdir -p $R
( OUT=$R/tl_ws NVCC_EXTRA=-DDSPARKCTL_WS timeout 200 bash bench/kernel_timeline.sh sm_90a ) > $R/tl_ws.log 2>&1; echo "ws rc=$?"
( OUT=$R/tl_base timeout 200 bash bench/kernel_timeline.sh sm_90a ) > $R/tl_base.log 2>&1; echo "base rc=$?"
python3 - $R <<'PY'
import json, sys
r = sys.argv[1]
ws = [json.loads(l) for l in open(f"{r}/tl_ws/timeline.jsonl")]
base = [json.loads(l) for l in open(f"{r}/tl_base/timeline.jsonl")]
wsn = ["wg0_wait_full","wg0_S","wg0_mask_max","wg0_wait_pfree","wg0_P","wg0_PV","wg0_finish","wg1_wait","wg1_PV","prod_issue","prod_wait_data","prod_wait_empty","prod_convert"]
keys = ["ids_issued","ids_published","q_landed","first_copy_issue","q_to_smem","tile_landed","dequant","next_copy_issue","s","p","pv","epi_wait","epi_stage"]
for a, b in zip(ws, base):
    sh = (a["H"], a["valid"], a["extra"], a["T"], a["heads_per_cta"], a["splits"])
    print(sh, "us/call ws %.2f base %.2f" % (a["stream_us_per_call"], b["stream_us_per_call"]), "tiles", a["tiles_max"])
    if a["heads_per_cta"] == 64 and a["tile_n"] == 64:
        print("   ws  :", {n: a["phase_cycles"][k][0] for n, k in zip(wsn, keys)})
        print("   base:", {k: b["phase_cycles"][k][0] for k in ["tile_landed","dequant","next_copy_issue","s","p","pv","s_mma"]})
PY
cd $OUT && tar czf r.tgz r
