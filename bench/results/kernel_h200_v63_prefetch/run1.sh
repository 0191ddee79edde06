#!/usr/bin/env bash
# Session 35's loader candidate (-DDSPARKCTL_PREFETCH_ONE_TEST=1 -DDSPARKCTL_CP_IGNORE_SRC=1, off by
# default) against v62 (the tree's default) in one call, with what a ship needs: the candidate check
# (GPU tests, outputs bit for bit against v62, 3 alternating bench rounds, memcheck, racecheck, the
# smoke at TP 4), then on the candidate the SM120-register build's GPU tests and memcheck, the bench
# table with the Triton peer, smoke --long and the kernel-smoke GPU tests. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
FL="-DDSPARKCTL_PREFETCH_ONE_TEST=1 -DDSPARKCTL_CP_IGNORE_SRC=1"
B=/tmp/v63; rm -rf $B; mkdir -p $B
# shellcheck disable=SC2086
timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kb120 $B/build_sm120regs.log -DDSPARKCTL_SMALL_MIN_BLOCKS=1 $FL > /dev/null &
OUT=$B NAME=pf FLAGS="$FL" BASE=v62 ROUNDS=3 timeout 330 bash bench/kernel_candidate_check.sh > $B/check.log 2>&1
wait
tar xzf $B/r.tgz -C $B && rm -f $B/r.tgz
tail -45 $B/check.log
SO=/tmp/kabn_pf/dsparkctl_sparse_mla_sm_90a.so
{ DSPARKCTL_KERNEL_SO=/tmp/kb120/dsparkctl_sparse_mla_sm_90a.so timeout 120 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider 2>&1 | tail -2
  DSPARKCTL_KERNEL_SO=/tmp/kb120/dsparkctl_sparse_mla_sm_90a.so timeout 60 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k sanitizer_subset 2>&1 | tail -3
} > $B/gpu_tests_sm120regs.log 2>&1
echo "== SM120 register budget build:"; cat $B/gpu_tests_sm120regs.log
DSPARKCTL_KERNEL_SO=$SO timeout 60 python3 bench/bench_kernel.py --triton-peer .dev/s30/kernel_peer/flash_mla_sm120_triton.py \
  --json $B/kernel_bench.json --md $B/kernel_bench.md > $B/bench.log 2>&1; echo "bench rc=$?"
DSPARKCTL_KERNEL_SO=$SO timeout 60 python3 -m dsparkctl smoke --kernel bundled --long --json > $B/smoke_long.json 2> $B/smoke_long.err; echo "smoke --long rc=$?"
DSPARKCTL_KERNEL_SO=$SO timeout 90 python3 -m pytest -q -rA -p no:cacheprovider -m gpu tests/test_kernel_smoke_gpu.py > $B/kernel_smoke_tests.log 2>&1; echo "kernel smoke tests: $(tail -1 $B/kernel_smoke_tests.log)"
rm -f $B/*.pt; (cd $B && tar czf "$OUT/r.tgz" .)
