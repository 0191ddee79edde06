#!/usr/bin/env bash
# v31c: racecheck details (lineinfo build) + phase timelines of the WS kernel's shapes
set -uo pipefail
R=$OUT/r; mkdir -p $R
ROOT=$PWD; export PYTHONPATH=$ROOT
ARCH=sm_90a
python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('$ARCH', Path('/tmp/wsl'), Path('$R/build_wsl.log'), extra_nvcc=['-DDSPARKCTL_WS', '-lineinfo'])" || { tail -30 $R/build_wsl.log; exit 1; }
SO=/tmp/wsl/dsparkctl_sparse_mla_$ARCH.so
DSPARKCTL_KERNEL_SO=$SO timeout 120 compute-sanitizer --tool racecheck --racecheck-report hazard python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset and H128" > $R/racecheck.log 2>&1
echo "racecheck rc=$?"; grep -E "SUMMARY|Race reported|hazard" $R/racecheck.log | head -5
grep -E "^\s*(=========)?\s+(Write|Read) Thread|sparse_mla_decode.cu:[0-9]+" $R/racecheck.log | sort | uniq -c | sort -rn | head -30
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_WS bench/kernel_timeline.cu -o /tmp/tlws
: > $R/tl_ws.jsonl
for args in "64 192 133 512 50" "64 192 133 512 25" "64 128 128 512 64" "64 128 128 1024 64" "128 128 128 512 64" "128 128 128 1024 64"; do timeout 30 /tmp/tlws $args >> $R/tl_ws.jsonl; done
python3 - $R <<'PY'
import json, sys
r = sys.argv[1]
wsn = ["wg0_wait_full","wg0_S","wg0_mask_max","wg0_wait_pfree","wg0_P","wg0_PV","wg0_finish","wg1_wait","wg1_PV","prod_issue","prod_landed","prod_wait_empty","prod_convert"]
keys = ["ids_issued","ids_published","q_landed","first_copy_issue","q_to_smem","tile_landed","dequant","next_copy_issue","s","p","pv","epi_wait","epi_stage"]
for a in map(json.loads, open(f"{r}/tl_ws.jsonl")):
    n = a["tiles_max"]
    print((a["H"], a["valid"], a["extra"], a["T"], a["heads_per_cta"], a["splits"]), "us %.2f tiles %d" % (a["stream_us_per_call"], n), {x: round(a["phase_cycles"][k][0] / n) for x, k in zip(wsn, keys)})
PY
cd $OUT && tar czf r.tgz r
