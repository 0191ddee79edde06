#!/usr/bin/env bash
# Prepared in session 38 for the next device call (not yet run: no device time was left): the
# candidate -DDSPARKCTL_WS_DIMS_PARTIALS=1 (v66's halves for split calls too: fp32 partials of half
# rows; config 7 then forces them at any split count but 2) built, the kernel's GPU tests on it
# (config 7 runs in test_matches_reference and the forced-split, verify-path and Q-shift tests), then
# the DSpark shapes' sweep of that layout alone (bench/plan_sweep.py --kind dspark --layout
# large_ws_dh) beside the automatic plan: does +512 T = 10 / 25 (17.6 / 23.6 us) gain from halves
# with fewer splits? Writes $OUT/{build.log,gpu_tests.log,sweep*.json,sweep*.md}. ~5-6 minutes.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
t0=$(date +%s)
timeout 100 python3 bench/build_kernel.py sm_90a /tmp/kf "$OUT/build.log" -DDSPARKCTL_WS_DIMS_PARTIALS=1 > /dev/null || { echo BUILD FAILED; tail -20 "$OUT/build.log"; exit 1; }
export DSPARKCTL_KERNEL_SO=/tmp/kf/dsparkctl_sparse_mla_sm_90a.so
timeout 120 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -x > "$OUT/gpu_tests.log" 2>&1
echo "tests rc=$? $(tail -1 "$OUT/gpu_tests.log") ($(( $(date +%s) - t0 )) s)"
timeout 120 python3 bench/plan_sweep.py --kind dspark --layout large_ws_dh --replays 2 --json "$OUT/sweep.json" --md "$OUT/sweep.md" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$?"; cat "$OUT/sweep.md" 2>/dev/null | tail -10
# and the decode rows it could move: T = 1 at 128 heads +1024 (LARGE32 18 splits, 13.0-13.7 us) and
# the 64- / 128-head T = 8 rows (WS 8-16 splits)
timeout 120 python3 bench/plan_sweep.py --kind decode --heads 64 128 --T 1 8 --layout large_ws_dh --replays 2 \
  --json "$OUT/sweep_decode.json" --md "$OUT/sweep_decode.md" > "$OUT/sweep_decode.log" 2>&1
echo "decode sweep rc=$?"; cat "$OUT/sweep_decode.md" 2>/dev/null | tail -10
python3 - "$OUT/sweep.json" "$OUT/sweep_decode.json" <<'PY' 2>/dev/null
import json, sys
for r in [r for f in sys.argv[1:] for r in json.load(open(f))["rows"]]:
    print(r["kind"], r["H"], r["extra"], r["T"], "auto", r["auto_us"], " ".join(f"s{f['splits']}:{f['us']}" for f in r["forced"]))
PY
echo "total $(( $(date +%s) - t0 )) s"
