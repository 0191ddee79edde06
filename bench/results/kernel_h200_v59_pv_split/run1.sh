#!/usr/bin/env bash
# session 32 (device, last call): -DDSPARKCTL_WS_PV_SPLIT=192 (warpgroup 0's P.V keeps dims 0-191,
# warpgroup 1 takes 192-511: the tensor work 3,584 / 2,560 units a tile instead of 4,096 / 2,048)
# against v53: GPU tests, outputs against v53 (not bit-equal by design: dims 192-255 take the e4m3
# lo part), 2 alternating rounds; then, for the candidate, memcheck on the sanitizer subset,
# racecheck on its -DDSPARKCTL_WS_RACECHECK_SYNC build (subset T2, bench/racecheck_ws_probe.py) and
# the product's smoke at TP 4 (accuracy against the fp64 reference).
set -uo pipefail
A=/tmp/abn; rm -rf $A; mkdir -p $A; export PYTHONPATH=$PWD
M=-DDSPARKCTL_WS_PV_SPLIT=192
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v53 $A/build_v53.log > /dev/null &
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_pvs $A/build_pvs.log $M > /dev/null &
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_pvsrc $A/build_pvsrc.log $M -DDSPARKCTL_WS_RACECHECK_SYNC > /dev/null &
wait
OUT=$A ROUNDS=2 TESTS=1 COMPARE=1 PREBUILT=1 timeout 330 bash bench/kernel_abn.sh v53= pvs=$M > $A/abn.log 2>&1
tail -45 $A/abn.log
SO=/tmp/kabn_pvs/dsparkctl_sparse_mla_sm_90a.so; RC=/tmp/kabn_pvsrc/dsparkctl_sparse_mla_sm_90a.so
{ echo "== memcheck (pvs)"; DSPARKCTL_KERNEL_SO=$SO timeout 150 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset or clustered_ctas" 2>&1 | tail -6
  echo "== racecheck (pvs, rendezvous build)"; DSPARKCTL_KERNEL_SO=$RC timeout 150 compute-sanitizer --tool racecheck python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset and T2" 2>&1 | tail -6
  DSPARKCTL_KERNEL_SO=$RC timeout 120 compute-sanitizer --tool racecheck python3 bench/racecheck_ws_probe.py > $A/racecheck_ws.log 2>&1
  echo "== racecheck, WS probe: $(grep -c '^ok' $A/racecheck_ws.log) launches ok | $(grep SUMMARY $A/racecheck_ws.log)"
} > $A/sanitizer.log 2>&1
cat $A/sanitizer.log
DSPARKCTL_KERNEL_SO=$SO timeout 120 python3 -m dsparkctl smoke --kernel bundled --tp 4 --json > $A/smoke_pvs.json 2> $A/smoke_pvs.err
echo "smoke (pvs, --kernel bundled --tp 4): rc $? $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); \
print('verdict', d['verdict'], [f['detail'] for f in d['findings'] if f['severity'] == 'error'])" $A/smoke_pvs.json 2>&1 | head -c 1500)"
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
