#!/usr/bin/env bash
# session 32 (device, last call): -DDSPARKCTL_WS_MASK_EARLY=1 (warpgroup 0 loads the tile's valid
# flags before issuing S) against v53: GPU tests, outputs bit for bit, 3 alternating rounds; then,
# for the candidate, what the full run checks that bears on a WS-only change: memcheck on the
# sanitizer subset, racecheck on its -DDSPARKCTL_WS_RACECHECK_SYNC build (subset T2 and
# bench/racecheck_ws_probe.py), and the product's smoke at TP 4.
set -uo pipefail
A=/tmp/abn; rm -rf $A; mkdir -p $A; export PYTHONPATH=$PWD
M=-DDSPARKCTL_WS_MASK_EARLY=1
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v53 $A/build_v53.log > /dev/null &
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_mke $A/build_mke.log $M > /dev/null &
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_mkerc $A/build_mkerc.log $M -DDSPARKCTL_WS_RACECHECK_SYNC > /dev/null &
wait
OUT=$A ROUNDS=3 TESTS=1 COMPARE=1 PREBUILT=1 timeout 330 bash bench/kernel_abn.sh v53= mke=$M > $A/abn.log 2>&1
tail -45 $A/abn.log
SO=/tmp/kabn_mke/dsparkctl_sparse_mla_sm_90a.so; RC=/tmp/kabn_mkerc/dsparkctl_sparse_mla_sm_90a.so
{ echo "== memcheck (mke)"; DSPARKCTL_KERNEL_SO=$SO timeout 150 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset or clustered_ctas" 2>&1 | tail -6
  echo "== racecheck (mke, rendezvous build)"; DSPARKCTL_KERNEL_SO=$RC timeout 150 compute-sanitizer --tool racecheck python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset and T2" 2>&1 | tail -6
  DSPARKCTL_KERNEL_SO=$RC timeout 120 compute-sanitizer --tool racecheck python3 bench/racecheck_ws_probe.py > $A/racecheck_ws.log 2>&1
  echo "== racecheck, WS probe: $(grep -c '^ok' $A/racecheck_ws.log) launches ok | $(grep SUMMARY $A/racecheck_ws.log)"
} > $A/sanitizer.log 2>&1
cat $A/sanitizer.log
DSPARKCTL_KERNEL_SO=$SO timeout 120 python3 -m dsparkctl smoke --kernel bundled --tp 4 --json > $A/smoke_mke.json 2> $A/smoke_mke.err
echo "smoke (mke, --kernel bundled --tp 4): rc $? $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); \
print('verdict', d['verdict'], [f['detail'] for f in d['findings'] if f['severity'] == 'error'])" $A/smoke_mke.json 2>&1 | head -c 1500)"
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
