#!/usr/bin/env bash
# Session 27, device call 7 (the session's last ~3 device minutes): what of v45's full device run
# fits. The default build (v45) and the SM120-register build in parallel, then the full bench
# table (Triton peer, --with-predecessor: bench/kernel_device_run.sh's bench step), then the GPU
# tests on the SM120-register build. Files go straight to $OUT, so whatever finished comes back.
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 bench/build_kernel.py sm_90a /tmp/kb "$OUT/build.log" > /dev/null &
python3 bench/build_kernel.py sm_90a /tmp/kb120 "$OUT/build_sm120regs.log" -DDSPARKCTL_SMALL_MIN_BLOCKS=1 > /dev/null &
wait
DSPARKCTL_KERNEL_SO=/tmp/kb/dsparkctl_sparse_mla_sm_90a.so python3 bench/bench_kernel.py \
  --triton-peer .dev/s30/kernel_peer/flash_mla_sm120_triton.py --with-predecessor \
  --json "$OUT/kernel_bench.json" --md "$OUT/kernel_bench.md" > "$OUT/bench.log" 2>&1
echo "bench rc=$?"
DSPARKCTL_KERNEL_SO=/tmp/kb120/dsparkctl_sparse_mla_sm_90a.so python3 -m pytest tests/test_kernel_gpu.py -q \
  -p no:cacheprovider > "$OUT/gpu_tests_sm120regs.log" 2>&1
tail -1 "$OUT/gpu_tests_sm120regs.log"
