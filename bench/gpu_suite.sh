#!/usr/bin/env bash
# Every GPU check of the project in one device call (H200; also any SM120/SM121 box).
# Run from a snapshot of the repository; writes logs and JSON under $OUT (default ./gpu-out).
#   bench/gpu_suite.sh [quick|cluster]
# quick: install, cluster doctor, smoke; cluster: install and the two cluster commands only.
# NPROC (default: every GPU on the host) ranks run the cluster commands.
# Needs: python3 with CUDA torch, nvcc; offline, what `python bench/device_wheels.py download
# .dev/devwheels --have bench/h200_image_packages.txt` puts there (carry .dev/devwheels): SGLang's import-time wheels and the SGLang
# wheel for the route / install tests (older trees: .dev/whl and .dev/wheelcache).
set -u
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ROOT=$PWD
if [ -d .dev/devwheels/whl ]; then
  # bench/device_wheels.py download .dev/devwheels (here): SGLang's import-time wheels, installed
  # only where this interpreter lacks them, and the SGLang wheel without its native libraries
  python3 bench/device_wheels.py install .dev/devwheels/whl /tmp/site || exit 3
  export PYTHONPATH=/tmp/site:$ROOT
elif ls .dev/whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .dev/whl/*.whl || exit 3
  export PYTHONPATH=/tmp/site:$ROOT
else
  export PYTHONPATH=$ROOT
fi
if [ -d .dev/devwheels/wheelcache ]; then
  export DSPARKCTL_WHEEL_CACHE=$ROOT/.dev/devwheels/wheelcache
elif [ -d .dev/wheelcache ]; then
  export DSPARKCTL_WHEEL_CACHE=$ROOT/.dev/wheelcache
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/suite.log" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' >> "$OUT/suite.log"
date -u +%FT%TZ >> "$OUT/suite.log"
LOG=$OUT/suite.log
NPROC=${NPROC:-$(nvidia-smi -L | grep -c '^GPU')}
echo "cluster ranks: $NPROC" >> "$LOG"
nvidia-smi topo -m >> "$LOG" 2>&1
# step NAME OUTFILE CMD...: stdout to OUTFILE, stderr and timings to suite.log (8 files come back)
step() {
  local name=$1 out=$2; shift 2; local t0; t0=$(date +%s)
  echo "== $name: $*" >> "$LOG"; "$@" > "$out" 2>> "$LOG"; local rc=$?
  echo "   $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a "$LOG"; return $rc
}

# 1. build + install through the product command (also the build cache for the tests)
step install "$OUT/install.json" python3 -m dsparkctl install-kernels --no-route \
  --prefix /tmp/dsp-prefix --json
SO=$(python3 -c "import json;print(json.load(open('$OUT/install.json'))['build']['library'])")
export DSPARKCTL_KERNEL_SO=$SO
echo "kernel: $SO"

# 2. cluster mode with NCCL, one rank per GPU
step cluster-doctor "$OUT/cluster_doctor.json" torchrun --nproc-per-node "$NPROC" -m dsparkctl doctor \
  --cluster --json --timeout 60
if [ "${1:-}" = cluster ]; then
  step cluster-smoke "$OUT/cluster_smoke.json" torchrun --nproc-per-node "$NPROC" -m dsparkctl \
    smoke --cluster --kernel bundled --json
  exit 0
fi

# 3. the product's smoke on this GPU (DeepSeek-V4-Flash preset, TP 4 plan)
step smoke "$OUT/smoke_tp4.json" python3 -m dsparkctl smoke --kernel bundled --json --tp 4
[ "${1:-}" = quick ] && exit 0

# 4. GPU tests (the kernel's own file is run by bench/kernel_device_run.sh)
step gpu-tests "$OUT/gpu_tests.log" python3 -m pytest -q -rA -s -p no:cacheprovider -m gpu \
  tests/test_route_gpu.py tests/test_install_gpu.py tests/test_kernel_smoke_gpu.py tests/test_gpus.py
tail -5 "$OUT/gpu_tests.log"

# 5. long kernel-level smoke and smoke in cluster mode
step smoke-long "$OUT/smoke_long.json" python3 -m dsparkctl smoke --kernel bundled --long --json
step cluster-smoke "$OUT/cluster_smoke.json" torchrun --nproc-per-node "$NPROC" -m dsparkctl smoke --cluster \
  --kernel bundled --json
