#!/usr/bin/env bash
# PREPARED in session 30 (no device time left): the nope P hi + lo candidates against the smoke.
#   bash bench/results/smoke_h200_v51/next.sh      (carry .dev/s30/kernel_peer; ~6-8 minutes)
# Builds (sm_90a, in parallel): v51 as shipped; hilo = -DDSPARKCTL_NOPE_P_HILO=1 (the main kernel's
# nope P.V in two fp16 passes); hilows = hilo + -DDSPARKCTL_WS_NOPE_P_HILO=1 (the WS kernel's too,
# through one buffer and two more hand-offs a tile; ptxas: 4 bytes of spill); hilonows = hilo +
# -DDSPARKCTL_NO_WS (the 64-head calls on the main kernel's wgmma path instead of the WS kernel).
# Then: the GPU tests on hilows (every path with a lo pass; with session 30's 6 cases built from the
# smoke's data, test_smoke_data_stay_well_inside_the_out_tolerance, also run on v51, where they
# should fail); `dsparkctl smoke --kernel bundled --tp 4
# --json` on all four (expected: hilo still fails the 64-head WS calls and passes the 16-head ones;
# hilows and hilonows pass all); bench/smoke_diag.py on hilows; 2 alternating rounds of the short
# bench for the lo passes' cost. Results under /tmp/r, packed into $OUT/r.tgz after each step.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
SO=dsparkctl_sparse_mla_sm_90a.so
pack() { (cd $R && tar czf "$OUT/r.tgz" .); }
declare -A FL=([v51]="" [hilo]="-DDSPARKCTL_NOPE_P_HILO=1" [hilows]="-DDSPARKCTL_NOPE_P_HILO=1 -DDSPARKCTL_WS_NOPE_P_HILO=1"
  [hilonows]="-DDSPARKCTL_NOPE_P_HILO=1 -DDSPARKCTL_NO_WS")
V="v51 hilo hilows hilonows"
for v in $V; do
  # shellcheck disable=SC2086
  timeout 300 python3 bench/build_kernel.py sm_90a /tmp/k_$v $R/build_$v.log ${FL[$v]} > /dev/null &
done
wait
for v in $V; do [ -f /tmp/k_$v/$SO ] || echo "BUILD FAILED $v"; done
DSPARKCTL_KERNEL_SO=/tmp/k_hilows/$SO timeout 150 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider > $R/gpu_tests_hilows.log 2>&1
echo "gpu tests hilows: $(grep -E '[0-9]+ (passed|failed)' $R/gpu_tests_hilows.log | tail -1)"
DSPARKCTL_KERNEL_SO=/tmp/k_v51/$SO timeout 60 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k smoke_data \
  > $R/gpu_tests_v51_smoke_data.log 2>&1
echo "v51 on the smoke-data tests: $(grep -E '[0-9]+ (passed|failed)' $R/gpu_tests_v51_smoke_data.log | tail -1)"; pack
for v in $V; do
  DSPARKCTL_KERNEL_SO=/tmp/k_$v/$SO timeout 90 python3 -m dsparkctl smoke --kernel bundled --tp 4 --json > $R/smoke_$v.json 2> $R/smoke_$v.err
  echo "smoke $v: rc $? $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); \
print(d['verdict'], [f['detail'] for f in d['findings'] if f['severity'] == 'error'])" $R/smoke_$v.json 2>&1 | head -c 900)"
done; pack
DSPARKCTL_KERNEL_SO=/tmp/k_hilows/$SO timeout 150 python3 bench/smoke_diag.py --json $R/diag_hilows.json --save $R/diag_hilows.pt \
  > $R/diag_hilows.log 2>&1; echo "diag hilows: $(tail -1 $R/diag_hilows.log)"; pack
mkdir -p $R/b
for r in 1 2; do for v in $V; do
  DSPARKCTL_KERNEL_SO=/tmp/k_$v/$SO timeout 90 python3 bench/bench_kernel.py --short --json $R/b/${v}_run$r.json \
    --md $R/b/${v}_run$r.md > $R/b/bench_${v}_run$r.log 2>&1 || echo "BENCH FAILED $v $r"
done; pack; done
for c in hilo hilows hilonows; do  # bench/ab_table.py reads old_run<r> / new_run<r>
  mkdir -p $R/ab_$c
  for r in 1 2; do
    cp $R/b/v51_run$r.json $R/ab_$c/old_run$r.json 2> /dev/null
    cp $R/b/${c}_run$r.json $R/ab_$c/new_run$r.json 2> /dev/null
  done
  python3 bench/ab_table.py $R/ab_$c v51 $c | tee $R/ab_$c.txt
done
pack
