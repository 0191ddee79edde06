#!/usr/bin/env bash
set -uo pipefail
R=$OUT/r; mkdir -p $R
ROOT=$PWD; export PYTHONPATH=$ROOT
ARCH=sm_90a
python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('$ARCH', Path('/tmp/ws'), Path('$R/build_ws.log'), extra_nvcc=['-DDSPARKCTL_WS'])" || { tail -30 $R/build_ws.log; exit 1; }
SO=/tmp/ws/dsparkctl_sparse_mla_$ARCH.so
DSPARKCTL_KERNEL_SO=$SO timeout 100 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider --maxfail=3 -k "H64 or H128 or narrow" > $R/smoke.log 2>&1
echo "smoke rc=$?"; tail -4 $R/smoke.log
grep -qE " passed" $R/smoke.log && ! grep -qE "failed|error" $R/smoke.log || { cd $OUT && tar czf r.tgz r; exit 0; }
( OUT=$R/tl_ws NVCC_EXTRA=-DDSPARKCTL_WS timeout 150 bash bench/kernel_timeline.sh sm_90a ) > $R/tl_ws.log 2>&1; echo "tl rc=$?"
python3 - $R <<'PY'
import json, sys
r = sys.argv[1]
wsn = ["wg0_wait_full","wg0_S","wg0_mask_max","wg0_wait_pfree","wg0_P","wg0_PV","wg0_finish","wg1_wait","wg1_PV","prod_issue","prod_wait_data","prod_wait_empty","prod_convert"]
keys = ["ids_issued","ids_published","q_landed","first_copy_issue","q_to_smem","tile_landed","dequant","next_copy_issue","s","p","pv","epi_wait","epi_stage"]
for a in map(json.loads, open(f"{r}/tl_ws/timeline.jsonl")):
    if a["heads_per_cta"] == 64 and a["tile_n"] == 64:
        n = a["tiles_max"]
        print((a["H"], a["valid"], a["extra"], a["T"], a["splits"]), "us %.2f" % a["stream_us_per_call"], "per tile:", {x: round(a["phase_cycles"][k][0] / n) for x, k in zip(wsn, keys)})
PY
( OUT=$R/ab TESTS=1 ROUNDS=2 NVCC_EXTRA_NEW=-DDSPARKCTL_WS timeout 300 bash bench/kernel_ab.sh .dev/s33/base ) > $R/ab.txt 2>&1
grep -E "passed|failed" $R/ab/gpu_tests.log | tail -2; sed -n '/^shape/,$p' $R/ab.txt | grep -E "shape|\+512 T=(25|50)"
( OUT=$R/ab2 ROUNDS=1 NVCC_EXTRA_NEW=-DDSPARKCTL_WS BENCH_EXTRA="--heads 64 128" timeout 200 bash bench/kernel_ab.sh .dev/s33/base ) > $R/ab2.txt 2>&1
sed -n '/^shape/,$p' $R/ab2.txt
cd $OUT && tar czf r.tgz r
