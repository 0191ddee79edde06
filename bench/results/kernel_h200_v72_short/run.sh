#!/usr/bin/env bash
# Session 45's last device call (the remaining ~3 device minutes): v72's --short table (DSpark and
# T = 1 rows, no Triton peer, no torch reference timing) on the shipped source. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=/tmp/v72s; rm -rf $R; mkdir -p $R
t0=$(date +%s)
timeout 60 python3 bench/build_kernel.py sm_90a /tmp/kb72 $R/build.log > /dev/null || { echo BUILD FAILED; tail -20 $R/build.log; }
echo "build $(( $(date +%s) - t0 )) s"
DSPARKCTL_KERNEL_SO=/tmp/kb72/dsparkctl_sparse_mla_sm_90a.so timeout 60 python3 bench/bench_kernel.py --short \
  --json $R/kernel_bench_short.json --md $R/kernel_bench_short.md > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\| (dspark|decode)" $R/kernel_bench_short.md | cut -d'|' -f2-9
(cd $R && tar czf "$OUT/r.tgz" .)
