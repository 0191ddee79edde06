#!/usr/bin/env bash
# PREPARED in session 24 (compile-checked only: sm_90a with and without the lazy rescale, the
# racecheck build, the timeline harness; 0 spills), for the next session's second device call: the
# WS kernel with two producer warpgroups (-DDSPARKCTL_WS_PRODUCERS=2, 512 threads, off by default).
# The consumers of long chains waited ~1,250 cycles a tile for the single producer in v40 (~960 after
# v41, by the A/B). Both producer warpgroups convert half of every tile.
# Every step has a timeout (a hang in a new barrier layout costs that step, not the call).
#   p2      -DDSPARKCTL_WS_PRODUCERS=2
#   p2lazy  the same with -DDSPARKCTL_WS_LAZY_RESCALE (if the first call's full run of lazy was clean)
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R/abn; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
SO=dsparkctl_sparse_mla_sm_90a.so
for v in v41: p2:-DDSPARKCTL_WS_PRODUCERS=2 p2lazy:-DDSPARKCTL_WS_PRODUCERS=2,-DDSPARKCTL_WS_LAZY_RESCALE \
         p2rc:-DDSPARKCTL_WS_PRODUCERS=2,-DDSPARKCTL_WS_RACECHECK_SYNC; do
  n=${v%%:*}; f=${v#*:}
  python3 bench/build_kernel.py sm_90a /tmp/kabn_$n $R/abn/build_$n.log ${f//,/ } > /dev/null &
done
for v in v41 p2; do
  x=""; [ $v = p2 ] && x=-DDSPARKCTL_WS_PRODUCERS=2
  nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE $x bench/kernel_timeline.cu -o /tmp/tl_$v 2> $R/tl_build_$v.log &
done
wait
grep -h "ws_kernel" -A2 $R/abn/build_p2.log | grep -E "spill" | head -2
OUT=$R/abn PREBUILT=1 TESTS=1 COMPARE=1 TEST_TIMEOUT=150 ROUNDS=2 timeout 400 bash bench/kernel_abn.sh v41= p2=-DDSPARKCTL_WS_PRODUCERS=2 \
  p2lazy=-DDSPARKCTL_WS_PRODUCERS=2,-DDSPARKCTL_WS_LAZY_RESCALE 2>&1 | tee $R/abn.txt | grep -vE "^decode H=(16|32)"
if ! grep -qx p2 $R/abn/failed_variants.txt 2> /dev/null; then
  DSPARKCTL_KERNEL_SO=/tmp/kabn_p2rc/$SO timeout 90 compute-sanitizer --tool racecheck python3 bench/racecheck_ws_probe.py > $R/racecheck_p2.log 2>&1
  echo "racecheck p2 (rendezvous build): $(grep -c '^ok' $R/racecheck_p2.log) launches ok | $(grep SUMMARY $R/racecheck_p2.log)"
  DSPARKCTL_KERNEL_SO=/tmp/kabn_p2/$SO timeout 90 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k sanitizer_subset > $R/memcheck_p2.log 2>&1
  echo "memcheck p2: $(tail -1 $R/memcheck_p2.log)"
  for v in v41 p2; do for sh in "64 192 133 0 50" "64 192 133 512 25" "128 128 128 1024 64"; do timeout 30 /tmp/tl_$v $sh >> $R/timeline_$v.jsonl; done; done
  python3 -c "
import json
for v in ('v41', 'p2'):
    for l in open('$R/timeline_' + v + '.jsonl'):
        a = json.loads(l); ph = a['phase_cycles']
        print(v, a['H'], a['extra'], a['T'], 'us', a['stream_us_per_call'], 'q_ready', ph['ws_q_ready_at'][0], 'staged', ph['ws_staged_at'][0], 'wg0 tile wait', ph['ids_issued'][0], 'producer landed', ph['pv'][0], 'convert', ph['epi_stage'][0])
" | tee $R/timeline.txt
fi
rm -rf /tmp/kabn_* $R/abn/*.pt; cd $R && tar czf $OUT/r.tgz .
