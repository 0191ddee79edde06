#!/usr/bin/env bash
# Session 54's device call: the product's GPU suite on this tree, then the bundled kernel on the
# prefill-sized calls the router now takes (bench_kernel.py --prefill-sized).
set -u
OUT=${OUT:-$PWD/gpu-out}
bash bench/gpu_suite.sh
SO=$(python3 -c "import json;print(json.load(open('$OUT/install.json'))['build']['library'])")
DSPARKCTL_KERNEL_SO=$SO PYTHONPATH=$PWD python3 bench/bench_kernel.py --prefill-sized \
  --json "$OUT/prefill_sized.json" --md "$OUT/prefill_sized.md" > "$OUT/prefill_sized.log" 2>&1
echo "prefill-sized bench rc=$?"
PYTHONPATH=$PWD DSPARKCTL_KERNEL_SO=$SO python3 -m pytest -q -rA -p no:cacheprovider -m gpu tests/test_kernel_gpu.py -k "compile" > "$OUT/compile_tests.log" 2>&1; echo "compile tests rc=$?"; tail -5 "$OUT/compile_tests.log"
tail -25 "$OUT/prefill_sized.md"
