#!/usr/bin/env bash
# v71 after a foreign kernel, and the plan re-checked (session 45, call 2): the bench table with
# `--with-predecessor` (an in-place q *= 1 before each call in the same graph, as a q projection
# writes q just before attention in serving; last measured on v66), then bench/plan_sweep.py over
# the DSpark shapes and the 64- / 128-head T = 1 decode shapes (last swept on v60 / v62), whose
# automatic plans sit nearest their targets. No Triton peer, no torch reference timing. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=/tmp/pred; rm -rf $R; mkdir -p $R
t0=$(date +%s)
timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kbp $R/build.log > /dev/null || { echo BUILD FAILED; tail -20 $R/build.log; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/env.txt; python3 -c 'import torch; print(torch.__version__, torch.version.cuda)' >> $R/env.txt
export DSPARKCTL_KERNEL_SO=/tmp/kbp/dsparkctl_sparse_mla_sm_90a.so
timeout 200 python3 bench/bench_kernel.py --no-ref --with-predecessor \
  --json $R/kernel_bench_pred.json --md $R/kernel_bench_pred.md > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s) - t0 )) s"
tail -45 $R/kernel_bench_pred.md
timeout 150 python3 bench/plan_sweep.py --kind dspark --json $R/sweep_dspark.json --md $R/sweep_dspark.md > $R/sweep_dspark.log 2>&1
echo "sweep dspark rc=$? $(( $(date +%s) - t0 )) s"; tail -12 $R/sweep_dspark.md
timeout 120 python3 bench/plan_sweep.py --kind decode --heads 64 128 --T 1 --json $R/sweep_t1.json --md $R/sweep_t1.md > $R/sweep_t1.log 2>&1
echo "sweep T=1 rc=$? $(( $(date +%s) - t0 )) s"; tail -8 $R/sweep_t1.md
(cd $R && tar czf "$OUT/r.tgz" .)
echo "total $(( $(date +%s) - t0 )) s"
