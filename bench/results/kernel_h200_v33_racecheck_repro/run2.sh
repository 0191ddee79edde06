#!/usr/bin/env bash
# v33 run 2 (device): (1) the repro with the P hand-off as bar.arrive (shipped), a named-barrier
# rendezvous and mbarriers; (2) the shipped kernel and its -DDSPARKCTL_WS_RACECHECK_SYNC build
# (the hand-off as a rendezvous) under racecheck on the v32 probe and the sanitizer subset;
# (3) the full device run of the shipped tree (tests, sanitizers, SM120-budget build, bench with
# the Triton peer and the foreign predecessor).
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
( OUT=$R/repro RUNS=2 timeout 200 bash bench/racecheck_ws_repro.sh 8 5 ) 2>&1 | tee $R/repro.txt
py_build() { python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('$1'), Path('$1/build.log'), extra_nvcc=[$2])"; }
py_build /tmp/kb_ship "" & py_build /tmp/kb_rcsync "'-DDSPARKCTL_WS_RACECHECK_SYNC'" & wait
P=bench/racecheck_ws_probe.py
for b in ship rcsync; do
  SO=/tmp/kb_$b/dsparkctl_sparse_mla_sm_90a.so
  for i in 1 2; do
    DSPARKCTL_KERNEL_SO=$SO SPLITS=1,2 timeout 100 compute-sanitizer --tool racecheck --print-limit 10 python3 $P > $R/real_${b}_probe$i.log 2>&1
    echo "$b probe $i: $(grep -c '^ok' $R/real_${b}_probe$i.log) ok | $(grep SUMMARY $R/real_${b}_probe$i.log | tr '\n' ' ')"
  done
done
SO=/tmp/kb_rcsync/dsparkctl_sparse_mla_sm_90a.so
DSPARKCTL_KERNEL_SO=$SO timeout 150 compute-sanitizer --tool racecheck python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset or routes_the_warp" > $R/rcsync_subset.log 2>&1
echo "rcsync subset racecheck rc=$?: $(grep -E 'SUMMARY|passed|failed' $R/rcsync_subset.log | tr '\n' ' ')"
DSPARKCTL_KERNEL_SO=$SO timeout 100 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "large_ws or routes_the_warp" > $R/rcsync_ws_tests.log 2>&1
echo "rcsync WS tests: $(tail -1 $R/rcsync_ws_tests.log)"
cd $R && tar czf $OUT/r.tgz --exclude=./repro/bin . ; cd - > /dev/null
mkdir -p /tmp/full
OUT=/tmp/full timeout 330 bash bench/kernel_device_run.sh .dev/s30/kernel_peer/flash_mla_sm120_triton.py --with-predecessor 2>&1 | tee /tmp/full/run.log | grep -vE "^\|" | tail -30
cd /tmp/full && tar czf $OUT/full.tgz . && ls -la $OUT
