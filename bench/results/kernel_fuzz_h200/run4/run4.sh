#!/usr/bin/env bash
# Session 52, device call 4: the GPU tests after their row / graph helpers moved to dsparkctl.kernel.fuzz
# (tests/test_kernel_gpu.py whole, tests/test_kernel_fuzz.py's seeds), then a campaign with the verify
# path's property (rows alone at forced layout and split count, bitwise) and CUDA-graph replays.
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
timeout 150 python3 bench/kernel_fuzz.py --seed ${SEED0:-0} --cases 100000 --time-budget ${BUDGET:-110} --json "$R/fuzz_shipped.json" > "$R/fuzz_shipped.log" 2>&1
echo "campaign rc=$?"; grep -E "FAIL|ERROR|\"cases\"|\"failed\"|verdicts|nondet|alone|graphs|strict|limited\"" "$R/fuzz_shipped.log" | head -30
gzip -f "$R"/fuzz_*.json
