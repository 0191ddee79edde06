#!/usr/bin/env bash
# Session 54's device call: the product's GPU suite on this tree, the bundled kernel on the
# prefill-sized calls the router now takes (bench_kernel.py --prefill-sized), and the kernel's GPU
# tests (the ops wrapper's torch.compile path changed). Everything is packed into results.tgz
# (a call brings back at most 8 files).
set -u
OUT=${OUT:-$PWD/gpu-out}
bash bench/gpu_suite.sh
SO=$(python3 -c "import json;print(json.load(open('$OUT/install.json'))['build']['library'])")
DSPARKCTL_KERNEL_SO=$SO PYTHONPATH=$PWD python3 bench/bench_kernel.py --prefill-sized \
  --json "$OUT/prefill_sized.json" --md "$OUT/prefill_sized.md" > "$OUT/prefill_sized.log" 2>&1
echo "prefill-sized bench rc=$?"
PYTHONPATH=$PWD DSPARKCTL_KERNEL_SO=$SO python3 -m pytest -q -rA -p no:cacheprovider \
  tests/test_kernel_gpu.py tests/test_kernel_ops_validation.py tests/test_route.py > "$OUT/kernel_tests.log" 2>&1
echo "kernel tests rc=$?"
grep -E "^(FAILED|ERROR)" "$OUT/kernel_tests.log" | head -20
tail -2 "$OUT/kernel_tests.log"
grep "rc=" "$OUT/suite.log"
tail -20 "$OUT/prefill_sized.md"
cd "$OUT" && tar czf /tmp/results.tgz . && find . -mindepth 1 -delete && mv /tmp/results.tgz .
