#!/usr/bin/env bash
# v31c: WS kernel with the in-place cp.async producer: smoke, tests + A/B short, 64/128-head rows, sanitizers
set -uo pipefail
R=$OUT/r; mkdir -p $R
ROOT=$PWD; export PYTHONPATH=$ROOT
ARCH=sm_90a
# build both sides through kernel_ab but with the tests first guarded by a timeout: build new alone first
python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('$ARCH', Path('/tmp/kab_new'), Path('$R/build_new.log'), extra_nvcc=['-DDSPARKCTL_WS'])" || { tail -30 $R/build_new.log; exit 1; }
SO=dsparkctl_sparse_mla_$ARCH.so
DSPARKCTL_KERNEL_SO=/tmp/kab_new/$SO timeout 90 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider --maxfail=3 -k "H64 or H128 or narrow" > $R/smoke.log 2>&1
echo "smoke rc=$?"; tail -3 $R/smoke.log
grep -qE " passed" $R/smoke.log && ! grep -qE "failed|error" $R/smoke.log || { cd $OUT && tar czf r.tgz r; exit 0; }
( OUT=$R/ab TESTS=1 ROUNDS=2 NVCC_EXTRA_NEW=-DDSPARKCTL_WS timeout 240 bash bench/kernel_ab.sh .dev/s33/base ) > $R/ab.txt 2>&1
grep -E "passed|failed" $R/ab/gpu_tests.log | tail -2; sed -n '/^shape/,$p' $R/ab.txt | grep -E "shape|\+512 T=(10|25|50)"
for side in old new; do
  DSPARKCTL_KERNEL_SO=/tmp/kab_$side/$SO timeout 80 python3 bench/bench_kernel.py --short --heads 64 128 --json $R/heads_$side.json --md $R/heads_$side.md > $R/heads_$side.log 2>&1 || tail -5 $R/heads_$side.log
done
python3 - $R <<'PY'
import json, sys
r = sys.argv[1]
o = {(x["H"], x["extra"], x["T"]): x["ours_us"] for x in json.load(open(f"{r}/heads_old.json"))["rows"]}
n = {(x["H"], x["extra"], x["T"]): x["ours_us"] for x in json.load(open(f"{r}/heads_new.json"))["rows"]}
for k in n: print("decode H=%d +%d T=%d | %.2f | %.2f | %+.2f" % (*k, o[k], n[k], n[k] - o[k]))
PY
echo "== memcheck"; DSPARKCTL_KERNEL_SO=/tmp/kab_new/$SO timeout 90 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset and H128" 2>&1 | tail -4
echo "== racecheck"; DSPARKCTL_KERNEL_SO=/tmp/kab_new/$SO timeout 90 compute-sanitizer --tool racecheck python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k "sanitizer_subset and H128" 2>&1 | tail -4
cd $OUT && tar czf r.tgz r
