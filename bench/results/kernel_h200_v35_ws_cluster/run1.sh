#!/usr/bin/env bash
# v35 run 1 (device): the WS kernel as 2-CTA clusters over a token's two head blocks.
# (1) build, smoke (-k "ws_cluster or large_ws or routes_the_warp", guarded by timeout: a new
# cluster protocol can hang); (2) same-call A/B vs this tree with -DDSPARKCTL_NO_WS_CLUSTER on the
# 128-head rows + all GPU tests; (3) memcheck / synccheck / racecheck (rendezvous build) on the WS
# probe (its 128-head case runs the cluster form); (4) phase timeline at 128 heads +1024 T = 64.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
SO=dsparkctl_sparse_mla_sm_90a.so
python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/kb_new'), Path('$R/build_new.log'))" > /dev/null || { tail -30 $R/build_new.log; exit 1; }
DSPARKCTL_KERNEL_SO=/tmp/kb_new/$SO timeout 120 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider --maxfail=3 -k "ws_cluster or large_ws or routes_the_warp" > $R/smoke.log 2>&1
echo "smoke rc=$? $(tail -1 $R/smoke.log)"
if grep -qE "failed|error|Timeout" $R/smoke.log || ! grep -q " passed" $R/smoke.log; then grep -E "^E |Error|assert" $R/smoke.log | head -30; cd $R && tar czf $OUT/r.tgz . ; exit 0; fi
( OUT=$R/ab TESTS=1 ROUNDS=2 NVCC_EXTRA_OLD=-DDSPARKCTL_NO_WS_CLUSTER BENCH_EXTRA="--heads 128" timeout 330 bash bench/kernel_ab.sh . ) > $R/ab.txt 2>&1
grep -E "passed|failed" $R/ab/gpu_tests.log | tail -1; sed -n '/^shape/,$p' $R/ab.txt
for side in old new; do DSPARKCTL_KERNEL_SO=/tmp/kab_$side/$SO timeout 60 python3 bench/results/kernel_h200_v35_ws_cluster/ws_cluster_outputs.py $R/ws_out_$side.pt > $R/ws_out_$side.log 2>&1 || tail -3 $R/ws_out_$side.log; done
python3 bench/results/kernel_h200_v35_ws_cluster/ws_cluster_outputs.py --compare $R/ws_out_old.pt $R/ws_out_new.pt; echo "bitwise rc=$?"; rm -f $R/*.pt
P=bench/racecheck_ws_probe.py
DSPARKCTL_KERNEL_SO=/tmp/kb_new/$SO timeout 90 compute-sanitizer --tool memcheck python3 $P > $R/memcheck_ws.log 2>&1
echo "memcheck: $(grep -c '^ok' $R/memcheck_ws.log) ok | $(grep SUMMARY $R/memcheck_ws.log)"
DSPARKCTL_KERNEL_SO=/tmp/kb_new/$SO timeout 90 compute-sanitizer --tool synccheck python3 $P > $R/synccheck_ws.log 2>&1
echo "synccheck: $(grep -c '^ok' $R/synccheck_ws.log) ok | $(grep SUMMARY $R/synccheck_ws.log)"
python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/kb_rc'), Path('$R/build_rc.log'), extra_nvcc=['-DDSPARKCTL_WS_RACECHECK_SYNC'])" > /dev/null
DSPARKCTL_KERNEL_SO=/tmp/kb_rc/$SO timeout 120 compute-sanitizer --tool racecheck python3 $P > $R/racecheck_ws.log 2>&1
echo "racecheck (rendezvous build): $(grep -c '^ok' $R/racecheck_ws.log) ok | $(grep SUMMARY $R/racecheck_ws.log)"
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl 2> /dev/null && for a in "128 128 128 1024 64" "128 128 128 512 64"; do timeout 30 /tmp/tl $a >> $R/timeline_ws.jsonl; done
python3 - $R <<'PY' | tee $R/timeline_ws_per_tile.txt
import json, sys
wsn = ["wg0_wait_full","wg0_S","wg0_mask_max","wg0_wait_pfree","wg0_P","wg0_PV","wg0_finish","wg1_wait","wg1_PV","prod_issue","prod_wait_data","prod_wait_empty","prod_convert"]
keys = ["ids_issued","ids_published","q_landed","first_copy_issue","q_to_smem","tile_landed","dequant","next_copy_issue","s","p","pv","epi_wait","epi_stage"]
for a in map(json.loads, open(f"{sys.argv[1]}/timeline_ws.jsonl")):
    n = a["tiles_max"]
    print((a["H"], a["extra"], a["T"], a["splits"]), "us %.2f" % a["stream_us_per_call"], "per tile:", {x: round(a["phase_cycles"][k][0] / n) for x, k in zip(wsn, keys)})
PY
rm -rf $R/ab/*.so; cd $R && tar czf $OUT/r.tgz .
