#!/usr/bin/env bash
# Session 25, device call 6: the L2 prefetch of tile j + 2's rows by prefetch.global.L2 (an LSU
# instruction a warp) instead of run1's cp.async.bulk.prefetch.L2 (which a warp issues lane by lane:
# run1 cut the producer's wait for copies from ~1,250 to ~250 cycles a tile but added ~1,600 to its
# prep). pfl: one prefetch a 128-byte line (6 a row); pfs: one a 32-byte sector (18 a row).
# Same-call A/B, 2 rounds, GPU tests + bit-for-bit compare on both, memcheck, WS timelines.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R/abn; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
SO=dsparkctl_sparse_mla_sm_90a.so
python3 bench/build_kernel.py sm_90a /tmp/kabn_v42 $R/abn/build_v42.log > /dev/null &
python3 bench/build_kernel.py sm_90a /tmp/kabn_pfl $R/abn/build_pfl.log -DDSPARKCTL_WS_L2_PREFETCH=128 > /dev/null &
python3 bench/build_kernel.py sm_90a /tmp/kabn_pfs $R/abn/build_pfs.log -DDSPARKCTL_WS_L2_PREFETCH=32 > /dev/null &
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_WS_L2_PREFETCH=128 bench/kernel_timeline.cu -o /tmp/tl_pfl 2> $R/tl_build_pfl.log &
nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_WS_L2_PREFETCH=32 bench/kernel_timeline.cu -o /tmp/tl_pfs 2> $R/tl_build_pfs.log &
wait
OUT=$R/abn PREBUILT=1 TESTS=1 COMPARE=1 TEST_TIMEOUT=120 ROUNDS=2 timeout 300 bash bench/kernel_abn.sh v42= pfl=-DDSPARKCTL_WS_L2_PREFETCH=128 \
  pfs=-DDSPARKCTL_WS_L2_PREFETCH=32 2>&1 | tee $R/abn.txt | grep -vE "^decode H=(16|32)"
DSPARKCTL_KERNEL_SO=/tmp/kabn_pfl/$SO timeout 45 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k sanitizer_subset > $R/memcheck_pfl.log 2>&1
echo "memcheck pfl: $(tail -1 $R/memcheck_pfl.log)"
for v in pfl pfs; do
  for sh in "64 192 133 512 50" "128 128 128 1024 64"; do timeout 20 /tmp/tl_$v $sh >> $R/timeline_$v.jsonl; done
done
python3 - <<PY | tee $R/summary.txt
import json
for v in ("pfl", "pfs"):
    for l in open("$R/timeline_" + v + ".jsonl"):
        a = json.loads(l); ph = a["phase_cycles"]
        print(v, a["H"], a["extra"], a["T"], "us", a["stream_us_per_call"], "wg0 tile wait", ph["ids_issued"][0], "landed", ph["pv"][0],
              "raw reads", ph["s_mma"][0], "convert", ph["epi_stage"][0], "prep", ph["epi_wait2"][0])
PY
rm -rf /tmp/kabn_* $R/abn/*.pt; cd $R && tar czf $OUT/r.tgz .
