#!/usr/bin/env bash
# Session 39, call 2 (and, with KS=2, call 3 through run2.sh): the K-split halves candidate
# (-DDSPARKCTL_WS_DH_KSPLIT=$KS, default 1; apply candidate.patch first: it is not in the tree) built alone and
# with -DDSPARKCTL_WS_DIMS_PARTIALS=1; the kernel's GPU tests on both; then the halves layout's
# sweep (bench/plan_sweep.py --layout large_ws_dh) of the DSpark shapes and the 64- / 128-head
# T = 1 / 8 decode rows on the second build, as session 39's call 1 ran it on v66's halves
# (bench/results/plan_sweep_s38_ws_dims/run1/). Writes $OUT/r.tgz.
set -uo pipefail
KS=${KS:-1}
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
A=/tmp/ks; rm -rf $A; mkdir -p $A
t0=$(date +%s)
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kks $A/build_ks.log -DDSPARKCTL_WS_DH_KSPLIT=$KS > /dev/null &
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kksp $A/build_ksp.log -DDSPARKCTL_WS_DH_KSPLIT=$KS -DDSPARKCTL_WS_DIMS_PARTIALS=1 > /dev/null &
wait
echo "built ($(( $(date +%s) - t0 )) s)"
for b in ks ksp; do
  DSPARKCTL_KERNEL_SO=/tmp/k$b/dsparkctl_sparse_mla_sm_90a.so timeout 150 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -x > $A/gpu_tests_$b.log 2>&1
  echo "tests $b rc=$? $(tail -1 $A/gpu_tests_$b.log) ($(( $(date +%s) - t0 )) s)"
done
export DSPARKCTL_KERNEL_SO=/tmp/kksp/dsparkctl_sparse_mla_sm_90a.so
timeout 120 python3 bench/plan_sweep.py --kind dspark --layout large_ws_dh --replays 2 --json $A/sweep.json --md $A/sweep.md > $A/sweep.log 2>&1
echo "sweep rc=$?"
timeout 120 python3 bench/plan_sweep.py --kind decode --heads 64 128 --T 1 8 --layout large_ws_dh --replays 2 \
  --json $A/sweep_decode.json --md $A/sweep_decode.md > $A/sweep_decode.log 2>&1
echo "decode sweep rc=$?"
python3 - $A/sweep.json $A/sweep_decode.json <<'PY' 2>/dev/null
import json, sys
for r in [r for f in sys.argv[1:] for r in json.load(open(f))["rows"]]:
    print(r["kind"], r["H"], r["extra"], r["T"], "auto", r["auto_us"], " ".join(f"s{f['splits']}:{f['us']}" for f in r["forced"]))
PY
grep -E "FAILED|Error|error" $A/gpu_tests_*.log | head -20
echo "total $(( $(date +%s) - t0 )) s"
(cd $A && tar czf "$OUT/r.tgz" .)
