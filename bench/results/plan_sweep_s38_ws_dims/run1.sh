#!/usr/bin/env bash
# Session 38, device call 7: config 7 (the WS kernel with v66's two CTAs per row block at any split
# count but 2; its fp32 partials of half rows) built, the kernel's GPU tests on it (config 7 runs in
# test_matches_reference, the forced-split, verify-path and Q-shift tests), then the DSpark shapes'
# sweep of that layout alone (bench/plan_sweep.py --kind dspark --layout large_ws_dh) beside the
# automatic plan, for the next plan rule. Writes $OUT/{build.log,gpu_tests.log,sweep.json,sweep.md}.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
t0=$(date +%s)
timeout 100 python3 bench/build_kernel.py sm_90a /tmp/kf "$OUT/build.log" > /dev/null || { echo BUILD FAILED; tail -20 "$OUT/build.log"; exit 1; }
export DSPARKCTL_KERNEL_SO=/tmp/kf/dsparkctl_sparse_mla_sm_90a.so
timeout 80 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -x > "$OUT/gpu_tests.log" 2>&1
echo "tests rc=$? $(tail -1 "$OUT/gpu_tests.log") ($(( $(date +%s) - t0 )) s)"
timeout 75 python3 bench/plan_sweep.py --kind dspark --layout large_ws_dh --replays 2 --json "$OUT/sweep.json" --md "$OUT/sweep.md" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$?"; cat "$OUT/sweep.md" 2>/dev/null | tail -10
python3 - "$OUT/sweep.json" <<'PY' 2>/dev/null
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    print(r["extra"], r["T"], "auto", r["auto_us"], " ".join(f"s{f['splits']}:{f['us']}" for f in r["forced"]))
PY
echo "total $(( $(date +%s) - t0 )) s"
