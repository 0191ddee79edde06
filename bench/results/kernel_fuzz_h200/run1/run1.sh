#!/usr/bin/env bash
# Session 52, device call 1: the randomized differential campaign (dsparkctl.kernel.fuzz) on v76.
#  1. the shipped build (sm_90a) and SM120's register budget (-DDSPARKCTL_SMALL_MIN_BLOCKS=1)
#  2. tests/test_kernel_fuzz.py's 200 GPU seeds on the shipped build
#  3. bench/kernel_fuzz.py campaigns: shipped build (seeds from 0), SM120-register build (from 100000)
#  4. compute-sanitizer memcheck over a short campaign (seeds from 200000)
set -uo pipefail
cd "$(dirname "$0")/../../../.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
R=$OUT/r; mkdir -p "$R"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; python3 -c 'import torch; print(torch.__version__, torch.version.cuda)'; } > "$R/env.txt" 2>&1
python3 bench/build_kernel.py sm_90a /tmp/kbuild "$R/build.log" || { tail -30 "$R/build.log"; exit 1; }
python3 bench/build_kernel.py sm_90a /tmp/kbuild_r "$R/build_sm120reg.log" -DDSPARKCTL_SMALL_MIN_BLOCKS=1 > /dev/null 2>&1 &
BG=$!
SO=/tmp/kbuild/dsparkctl_sparse_mla_sm_90a.so
DSPARKCTL_KERNEL_SO=$SO timeout 150 python3 -m pytest tests/test_kernel_fuzz.py -q -p no:cacheprovider -rfE > "$R/fuzz_tests.log" 2>&1
echo "pytest rc=$?"; tail -3 "$R/fuzz_tests.log"
DSPARKCTL_KERNEL_SO=$SO timeout 200 python3 bench/kernel_fuzz.py --seed 0 --cases 100000 --time-budget ${BUDGET1:-150} \
  --json "$R/fuzz_shipped.json" > "$R/fuzz_shipped.log" 2>&1
echo "shipped campaign rc=$?"; grep -E "FAIL|ERROR|\"cases\"|\"failed\"|worst|seconds" "$R/fuzz_shipped.log" | head -20
wait $BG
DSPARKCTL_KERNEL_SO=/tmp/kbuild_r/dsparkctl_sparse_mla_sm_90a.so timeout 100 python3 bench/kernel_fuzz.py --seed 100000 --cases 100000 \
  --time-budget ${BUDGET2:-60} --json "$R/fuzz_sm120reg.json" > "$R/fuzz_sm120reg.log" 2>&1
echo "sm120-register campaign rc=$?"; grep -E "FAIL|ERROR|\"cases\"|\"failed\"|worst" "$R/fuzz_sm120reg.log" | head -20
DSPARKCTL_KERNEL_SO=$SO timeout 130 compute-sanitizer --tool memcheck --print-limit 20 python3 bench/kernel_fuzz.py --seed 200000 \
  --cases 100000 --time-budget ${BUDGET3:-80} --json "$R/fuzz_memcheck.json" > "$R/fuzz_memcheck.log" 2>&1
echo "memcheck campaign rc=$?"; grep -E "ERROR SUMMARY|FAIL|ERROR |\"cases\"|\"failed\"" "$R/fuzz_memcheck.log" | head -20
gzip -f "$R"/fuzz_*.json
