#!/usr/bin/env bash
# Session 25, device call 4: the WS producer's raw reads without their 2-way bank conflict, swapped
# by store address (-DDSPARKCTL_WS_RAW_SWAP: no select, no spill, +24 SASS instructions). Session
# 23's form of the same idea swapped registers by select, spilled 4 bytes, and was slower
# (../kernel_h200_v40_ws_producer/). Same-call A/B, 3 rounds, GPU tests + bit-for-bit compare,
# memcheck, ncu bank-conflict counts and the WS timeline of both builds.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R/abn; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
SO=dsparkctl_sparse_mla_sm_90a.so
python3 bench/build_kernel.py sm_90a /tmp/kabn_v42 $R/abn/build_v42.log > /dev/null &
python3 bench/build_kernel.py sm_90a /tmp/kabn_swap $R/abn/build_swap.log -DDSPARKCTL_WS_RAW_SWAP > /dev/null &
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl_v42 2> $R/tl_build_v42.log &
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_WS_RAW_SWAP bench/kernel_timeline.cu -o /tmp/tl_swap 2> $R/tl_build_swap.log &
wait
OUT=$R/abn PREBUILT=1 TESTS=1 COMPARE=1 TEST_TIMEOUT=150 ROUNDS=3 timeout 330 bash bench/kernel_abn.sh v42= swap=-DDSPARKCTL_WS_RAW_SWAP \
  2>&1 | tee $R/abn.txt | grep -vE "^decode H=(16|32)"
DSPARKCTL_KERNEL_SO=/tmp/kabn_swap/$SO timeout 60 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k sanitizer_subset > $R/memcheck_swap.log 2>&1
echo "memcheck swap: $(tail -1 $R/memcheck_swap.log)"
for v in v42 swap; do
  DSPARKCTL_KERNEL_SO=/tmp/kabn_$v/$SO timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed \
    -k regex:ws_kernel --csv python3 bench/kernel_profile.py ncu big dspark > $R/ncu_$v.csv 2> $R/ncu_$v.err
  for sh in "64 192 133 512 50" "128 128 128 1024 64"; do timeout 30 /tmp/tl_$v $sh >> $R/timeline_$v.jsonl; done
done
python3 - <<PY | tee $R/summary.txt
import csv, json
for v in ("v42", "swap"):
    rows = [r for r in csv.reader(open("$R/ncu_" + v + ".csv")) if len(r) > 10]
    if rows:
        h = rows[0]; i_n, i_v = h.index("Metric Name"), h.index("Metric Value")
        print(v, "ncu:", "; ".join(f"{r[i_n]}={r[i_v]}" for r in rows[1:]))
    for l in open("$R/timeline_" + v + ".jsonl"):
        a = json.loads(l); ph = a["phase_cycles"]
        print(v, a["H"], a["extra"], a["T"], "us", a["stream_us_per_call"], "wg0 tile wait", ph["ids_issued"][0], "landed", ph["pv"][0],
              "raw reads", ph["s_mma"][0], "convert", ph["epi_stage"][0])
PY
rm -rf /tmp/kabn_* $R/abn/*.pt; cd $R && tar czf $OUT/r.tgz .
