#!/usr/bin/env bash
# Session 52, device call 3: the campaigns again with the conditioning-aware verdict (strict /
# fp32-limited / fail, dsparkctl.kernel.fuzz.verdict), same seeds as call 1; --explain on any failure.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
R=$OUT/r; mkdir -p "$R"
{ nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c 'import torch; print(torch.__version__, torch.version.cuda)'; } > "$R/env.txt" 2>&1
python3 bench/build_kernel.py sm_90a /tmp/kbuild "$R/build.log" > /dev/null || { tail -30 "$R/build.log"; exit 1; }
python3 bench/build_kernel.py sm_90a /tmp/kbuild_r "$R/build_sm120reg.log" -DDSPARKCTL_SMALL_MIN_BLOCKS=1 > /dev/null 2>&1 &
BG=$!
SO=/tmp/kbuild/dsparkctl_sparse_mla_sm_90a.so
DSPARKCTL_KERNEL_SO=$SO timeout 150 python3 -m pytest tests/test_kernel_fuzz.py -q -p no:cacheprovider -rfE > "$R/fuzz_tests.log" 2>&1
echo "pytest rc=$?"; tail -2 "$R/fuzz_tests.log"; grep FAILED "$R/fuzz_tests.log" | head
DSPARKCTL_KERNEL_SO=$SO timeout 200 python3 bench/kernel_fuzz.py --seed 0 --cases 100000 --time-budget ${BUDGET1:-150} \
  --json "$R/fuzz_shipped.json" > "$R/fuzz_shipped.log" 2>&1
echo "shipped campaign rc=$?"; grep -vE "^ +[0-9]+ +cfg|^[0-9]+ cases" "$R/fuzz_shipped.log" | grep -v fp32_limited_seeds | head -40
wait $BG
DSPARKCTL_KERNEL_SO=/tmp/kbuild_r/dsparkctl_sparse_mla_sm_90a.so timeout 100 python3 bench/kernel_fuzz.py --seed 100000 --cases 100000 \
  --time-budget ${BUDGET2:-60} --json "$R/fuzz_sm120reg.json" > "$R/fuzz_sm120reg.log" 2>&1
echo "sm120-register campaign rc=$?"; grep -E "FAIL|ERROR|\"cases\"|\"failed\"|worst|verdicts|nondet|near_zero" "$R/fuzz_sm120reg.log" | head -20
FAILS=$(grep -h '^FAIL seed' "$R/fuzz_shipped.log" | head -8 | sed -E 's/^FAIL seed([0-9]+)-.*/\1/' | paste -sd, -)
if [ -n "$FAILS" ]; then
  DSPARKCTL_KERNEL_SO=$SO timeout 90 python3 bench/kernel_fuzz.py --explain --seeds "$FAILS" > "$R/explain_fails.jsonl" 2>&1
  echo "explain rc=$? ($FAILS)"
fi
gzip -f "$R"/fuzz_*.json
