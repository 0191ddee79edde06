#!/usr/bin/env bash
# v62's full device run in one call (session 35): bench/kernel_device_run.sh with the Triton peer
# (GPU tests on the shipped and the SM120-register builds, sanitizers, smoke, the bench table), the
# DSpark plan sweep, then the product's GPU steps of bench/gpu_suite.sh except its route / install
# tests (they need the SGLang wheel and its import-time wheels, which do not travel). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
F=/tmp/full; rm -rf $F; mkdir -p $F/run1 $F/suite
t0=$(date +%s)
OUT=$F/run1 timeout 330 bash bench/kernel_device_run.sh .dev/s30/kernel_peer/flash_mla_sm120_triton.py > $F/run1/full_run.log 2>&1
echo "full run rc=$? $(( $(date +%s) - t0 )) s"
DSPARKCTL_KERNEL_SO=/tmp/kbuild/dsparkctl_sparse_mla_sm_90a.so timeout 60 python3 bench/plan_sweep.py --kind dspark \
  --json $F/run1/sweep_dspark.json --md $F/run1/sweep_dspark.md > $F/run1/sweep.log 2>&1; echo "sweep rc=$?"
S=$F/suite; L=$S/suite.log
step() { local n=$1 o=$2; shift 2; local t=$(date +%s); echo "== $n: $*" >> $L; timeout 150 "$@" > "$o" 2>> $L; local rc=$?; echo "   $n rc=$rc $(( $(date +%s) - t ))s" | tee -a $L; }
step install $S/install.json python3 -m dsparkctl install-kernels --no-route --prefix /tmp/dsp-prefix --json
export DSPARKCTL_KERNEL_SO=$(python3 -c "import json;print(json.load(open('$S/install.json'))['build']['library'])")
step smoke $S/smoke_tp4.json python3 -m dsparkctl smoke --kernel bundled --json --tp 4
step kernel-smoke-tests $S/gpu_tests.log python3 -m pytest -q -rA -p no:cacheprovider -m gpu tests/test_kernel_smoke_gpu.py
step smoke-long $S/smoke_long.json python3 -m dsparkctl smoke --kernel bundled --long --json
step cluster-smoke $S/cluster_smoke.json torchrun --nproc-per-node 1 -m dsparkctl smoke --cluster --kernel bundled --json
(cd $F && tar czf "$OUT/r.tgz" .)
echo "total $(( $(date +%s) - t0 )) s"
