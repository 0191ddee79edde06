#!/usr/bin/env bash
# v66 after a foreign kernel (session 38): the bench table with `--with-predecessor` (an in-place
# q *= 1 before each call, in the same graph, as a q projection writes q just before attention in
# serving), which the README's serving numbers quote (last measured on v64), plus the GPU inventory test
# (tests/test_gpus.py::test_real_gpus, also in bench/gpu_suite.sh).
# No Triton peer, no torch reference timing. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=/tmp/pred; rm -rf $R; mkdir -p $R
t0=$(date +%s)
python3 -m pytest -q -rA -p no:cacheprovider -m gpu tests/test_gpus.py > $R/test_gpus.log 2>&1; echo "test_gpus rc=$?"; tail -2 $R/test_gpus.log
timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kbp $R/build.log > /dev/null || { echo BUILD FAILED; tail -20 $R/build.log; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/env.txt; python3 -c 'import torch; print(torch.__version__, torch.version.cuda)' >> $R/env.txt
DSPARKCTL_KERNEL_SO=/tmp/kbp/dsparkctl_sparse_mla_sm_90a.so timeout 300 python3 bench/bench_kernel.py --no-ref --with-predecessor \
  --json $R/kernel_bench_pred.json --md $R/kernel_bench_pred.md > $R/bench.log 2>&1; echo "bench rc=$?"
tail -45 $R/kernel_bench_pred.md
(cd $R && tar czf "$OUT/r.tgz" .)
echo "total $(( $(date +%s) - t0 )) s"
