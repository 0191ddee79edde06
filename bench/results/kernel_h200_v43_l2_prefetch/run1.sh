#!/usr/bin/env bash
# Session 25, device call 5: the WS producer prefetches tile j + 2's rows into L2 as soon as it has
# their offsets (-DDSPARKCTL_WS_L2_PREFETCH: one cp.async.bulk.prefetch.L2 a valid row, 16-byte
# path), about one consumer tile before warpgroup 1 can issue their bulk copies. Same-call A/B, 3
# rounds, GPU tests + bit-for-bit compare, memcheck, the WS timeline of both builds.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R/abn; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
SO=dsparkctl_sparse_mla_sm_90a.so
python3 bench/build_kernel.py sm_90a /tmp/kabn_v42 $R/abn/build_v42.log > /dev/null &
python3 bench/build_kernel.py sm_90a /tmp/kabn_pf $R/abn/build_pf.log -DDSPARKCTL_WS_L2_PREFETCH > /dev/null &
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl_v42 2> $R/tl_build_v42.log &
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_WS_L2_PREFETCH bench/kernel_timeline.cu -o /tmp/tl_pf 2> $R/tl_build_pf.log &
wait
OUT=$R/abn PREBUILT=1 TESTS=1 COMPARE=1 TEST_TIMEOUT=150 ROUNDS=3 timeout 330 bash bench/kernel_abn.sh v42= pf=-DDSPARKCTL_WS_L2_PREFETCH \
  2>&1 | tee $R/abn.txt | grep -vE "^decode H=(16|32)"
DSPARKCTL_KERNEL_SO=/tmp/kabn_pf/$SO timeout 60 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k sanitizer_subset > $R/memcheck_pf.log 2>&1
echo "memcheck pf: $(tail -1 $R/memcheck_pf.log)"
for v in v42 pf; do
  for sh in "64 192 133 512 50" "128 128 128 1024 64"; do timeout 30 /tmp/tl_$v $sh >> $R/timeline_$v.jsonl; done
done
python3 - <<PY | tee $R/summary.txt
import csv, json
for v in ("v42", "pf"):
    for l in open("$R/timeline_" + v + ".jsonl"):
        a = json.loads(l); ph = a["phase_cycles"]
        print(v, a["H"], a["extra"], a["T"], "us", a["stream_us_per_call"], "wg0 tile wait", ph["ids_issued"][0], "landed", ph["pv"][0],
              "raw reads", ph["s_mma"][0], "convert", ph["epi_stage"][0])
PY
rm -rf /tmp/kabn_* $R/abn/*.pt; cd $R && tar czf $OUT/r.tgz .
