#!/usr/bin/env bash
# Session 37, device call 1: what the partial (tail) tile costs at the DSpark shapes, on v64 (tree
# 2720736). The automatic plan's time and the 64-head layout's split sweep at valid lengths 133 /
# 128 / 192 / 69 (topk 192). Ran as .dev/s37/probe1.sh from .dev/s37/head, a `git archive 2720736
# kernels dsparkctl bench/plan_sweep.py bench/bench_kernel.py bench/build_kernel.py pyproject.toml`
# copy (carried), so that the kernel edits in the working tree did not travel into it; from a
# checkout of 2720736 the same commands run from the repository root.
set -uo pipefail
cd "$(dirname "$0")/head"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kb64 $R/build.log > /dev/null || { echo BUILD FAILED; tail $R/build.log; exit 1; }
export DSPARKCTL_KERNEL_SO=/tmp/kb64/dsparkctl_sparse_mla_sm_90a.so
i=0
for v in 133 128 192 69; do
  i=$((i+1)); f=$R/r${i}_v$v
  timeout 150 python3 bench/plan_sweep.py --kind dspark --T 25 50 --layout large --valid $v --json $f.json --md $f.md > $f.log 2>&1
  echo "valid $v rc=$?"; cat $f.log
done
(cd $OUT && tar czf r.tgz r)
