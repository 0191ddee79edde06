#!/usr/bin/env bash
# v72's checks not in the full run (session 46, call 2): compute-sanitizer initcheck (never run on
# this kernel before) and synccheck (last run on v35) over the sanitizer subset and the clustered-CTA
# cases, on the shipped sm_90a build; then the bench table after a foreign kernel (`--with-predecessor`,
# last run on v71). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=/tmp/chk; rm -rf $R; mkdir -p $R
t0=$(date +%s)
timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kbc $R/build.log > /dev/null || { echo BUILD FAILED; tail -20 $R/build.log; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/env.txt; python3 -c 'import torch; print(torch.__version__, torch.version.cuda)' >> $R/env.txt
compute-sanitizer --version | tail -1 >> $R/env.txt
export DSPARKCTL_KERNEL_SO=/tmp/kbc/dsparkctl_sparse_mla_sm_90a.so
echo "build $(( $(date +%s) - t0 )) s"
for tool in initcheck synccheck; do
  timeout 170 compute-sanitizer --tool $tool python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider \
    -k "sanitizer_subset or clustered_ctas" > $R/$tool.log 2>&1
  echo "$tool rc=$? $(( $(date +%s) - t0 )) s"; grep -E "passed|failed|SUMMARY" $R/$tool.log | tail -3
done
timeout 200 python3 bench/bench_kernel.py --no-ref --with-predecessor \
  --json $R/kernel_bench_pred.json --md $R/kernel_bench_pred.md > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s) - t0 )) s"
grep -E "dspark|\| 1 \|" $R/kernel_bench_pred.md | head -20
(cd $R && tar czf "$OUT/r.tgz" .)
echo "total $(( $(date +%s) - t0 )) s"
