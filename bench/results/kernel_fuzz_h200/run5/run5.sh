#!/usr/bin/env bash
# Session 52, device call 5: the GPU tests after the row helper became kernel_smoke.row_slice
# (tests/test_kernel_gpu.py whole, tests/test_kernel_fuzz.py's seeds), then the campaign again (same seeds as call 4) with the verify
# path's property judged per kernel (bitwise where the lone row's plan runs the same arithmetic) and graphs.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
R=$OUT/r; mkdir -p "$R"
python3 bench/build_kernel.py sm_90a /tmp/kbuild "$R/build.log" > /dev/null || { tail -30 "$R/build.log"; exit 1; }
export DSPARKCTL_KERNEL_SO=/tmp/kbuild/dsparkctl_sparse_mla_sm_90a.so
timeout 230 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider > "$R/gpu_tests.log" 2>&1
echo "kernel gpu tests rc=$?"; tail -2 "$R/gpu_tests.log"; grep FAILED "$R/gpu_tests.log" | head
timeout 100 python3 -m pytest tests/test_kernel_fuzz.py -q -p no:cacheprovider -m gpu > "$R/fuzz_tests.log" 2>&1
echo "fuzz gpu tests rc=$?"; tail -2 "$R/fuzz_tests.log"; grep FAILED "$R/fuzz_tests.log" | head
timeout 150 python3 bench/kernel_fuzz.py --seed 0 --cases 100000 --time-budget ${BUDGET:-110} --json "$R/fuzz_shipped.json" > "$R/fuzz_shipped.log" 2>&1
echo "campaign rc=$?"; grep -E "FAIL|ERROR|\"cases\"|\"failed\"|verdicts|nondet|alone|graphs|strict|limited\"" "$R/fuzz_shipped.log" | head -30
gzip -f "$R"/fuzz_*.json
