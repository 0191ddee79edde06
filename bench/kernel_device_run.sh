#!/usr/bin/env bash
# One device call for the sparse-MLA kernel: build for the GPU at hand, run the GPU tests,
# compute-sanitizer (memcheck + racecheck) on a small subset, then the benchmark.
# Logs and results land in $OUT (the device tool's output folder) or ./kernel_run_out.
#   usage: bash bench/kernel_device_run.sh [TRITON_PEER_PY] [--quick|--short] [--skip-tests] [--no-sanitizer] [--sweep]
#          [--with-predecessor]  (also time each call after a foreign kernel: bench_kernel.py --with-predecessor)
# On Hopper the GPU tests run twice: on the shipped build, and on a build with SM120's register
# budget for the SMALL layouts (-DDSPARKCTL_SMALL_MIN_BLOCKS=1: no 128-register cap, so ptxas
# allocates as it does for sm_120a), with memcheck on that one's sanitizer subset too, and the
# warp-specialized kernel is racechecked on its -DDSPARKCTL_WS_RACECHECK_SYNC build (v33; the
# sanitizer subset's racecheck too since v37, when the plan routes 64-head calls to that kernel).
# --short (DSpark + T=1 rows, 3 replays) with --no-sanitizer fits build + tests + bench in ~90 s.
# After the GPU tests it runs `dsparkctl smoke --kernel bundled --tp 4 --json` on the build (smoke_tp4.json).
# KERNEL_NVCC_EXTRA="-DFLAG ..." adds build flags to every build of the run (the shipped, racecheck and
# SM120-register builds), so a candidate that is off by default gets the full run before it ships.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/kernel_run_out}
mkdir -p "$OUT"
PEER=${1:-}
case "$PEER" in --*) PEER="";; esac
QUICK=""; SKIP_TESTS=""; SWEEP=""; NO_SAN=""; PRED=""
for a in "$@"; do
  [ "$a" = "--quick" ] && QUICK="--quick"
  [ "$a" = "--short" ] && QUICK="--short"
  [ "$a" = "--no-sanitizer" ] && NO_SAN=1
  [ "$a" = "--skip-tests" ] && SKIP_TESTS=1
  [ "$a" = "--sweep" ] && SWEEP=1
  [ "$a" = "--with-predecessor" ] && PRED=1
done
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
PY=${PYTHON:-python3}
# shellcheck source=bench/kernel_checks.sh
. bench/kernel_checks.sh
{ nvidia-smi; $PY -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name())'; nvcc --version | tail -1; } > "$OUT/env.txt" 2>&1
XF=${KERNEL_NVCC_EXTRA:-}  # word-split below: one argument per flag
echo "extra nvcc flags: ${KERNEL_NVCC_EXTRA:-none}" >> "$OUT/env.txt"
ARCH=$($PY -c 'import torch; from dsparkctl.kernel.build import arch_for_capability as a; print(a(*torch.cuda.get_device_capability()))')
t0=$(date +%s)
# shellcheck disable=SC2086
$PY bench/build_kernel.py "$ARCH" /tmp/kbuild "$OUT/build.log" $XF || { echo BUILD FAILED; tail -50 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
export DSPARKCTL_KERNEL_SO=/tmp/kbuild/dsparkctl_sparse_mla_$ARCH.so
grep -E "registers|spill" "$OUT/build.log" | sort | uniq -c | head -30
if [ -z "$SKIP_TESTS" ]; then
  # (v37) on Hopper the subset's racecheck runs on the warp-specialized kernel's racecheck build (its
  # P hand-off as a rendezvous; every other kernel identical, a CPU test pins the PTX): since v37 the
  # automatic plan routes 64-head calls there, and racecheck misreads the shipped bar.arrive hand-off
  # (bench/racecheck_ws_repro.cu)
  RC_SO=$DSPARKCTL_KERNEL_SO
  if [ "$ARCH" = sm_90a ] && [ -z "$NO_SAN" ]; then
    # shellcheck disable=SC2086
    $PY bench/build_kernel.py "$ARCH" /tmp/kbuild_wsrc "$OUT/build_wsrc.log" -DDSPARKCTL_WS_RACECHECK_SYNC $XF > /dev/null &
    RC_SO=/tmp/kbuild_wsrc/dsparkctl_sparse_mla_$ARCH.so
  fi
  t0=$(date +%s)
  $PY -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider 2>&1 | tee "$OUT/gpu_tests.log" | grep -vE "^  File|^Thread|^Extension" | tail -40
  echo "gpu tests: $(( $(date +%s) - t0 )) s"
  # (session 52) the randomized cases' fixed GPU sample (200 seeds, dsparkctl.kernel.fuzz; ~40 s):
  # odd page sizes and strides, views, bad data, forced layouts and splits; longer campaigns are
  # bench/kernel_fuzz.py's (bench/results/kernel_fuzz_h200/)
  t0=$(date +%s)
  $PY -m pytest tests/test_kernel_fuzz.py -q -p no:cacheprovider -m gpu 2>&1 | tee "$OUT/fuzz_tests.log" | tail -3
  echo "fuzz tests: $(( $(date +%s) - t0 )) s"
  # (session 30) the product's own kernel smoke on this build: every call the DeepSeek-V4-Flash
  # preset plans (TP 4), eager and graph-captured, against the fp64 reference. Its data (per-group
  # scale spread, sinks, valid lengths from the serving ladder, up to 1,536 tokens) found v12's
  # 11-bit nope P missing the tolerance where tests/test_kernel_gpu.py did not
  # (bench/results/smoke_h200_v51/).
  t0=$(date +%s)
  echo "$(kernel_smoke "$DSPARKCTL_KERNEL_SO" "$OUT/smoke_tp4.json") ($(( $(date +%s) - t0 )) s)"
  wait
  t0=$(date +%s)
  [ -n "$NO_SAN" ] || kernel_sanitizers "$DSPARKCTL_KERNEL_SO" "$RC_SO" 15 > "$OUT/sanitizer.log" 2>&1
  [ -n "$NO_SAN" ] && echo "sanitizer: skipped (--no-sanitizer)" > "$OUT/sanitizer.log"
  cat "$OUT/sanitizer.log"
  echo "sanitizer: $(( $(date +%s) - t0 )) s"
  if [ "$ARCH" = sm_90a ]; then
    t0=$(date +%s)
    # shellcheck disable=SC2086
    $PY bench/build_kernel.py "$ARCH" /tmp/kbuild_sm120regs "$OUT/build_sm120regs.log" -DDSPARKCTL_SMALL_MIN_BLOCKS=1 $XF > /dev/null \
      || { echo "BUILD FAILED (SM120 register budget)"; tail -30 "$OUT/build_sm120regs.log"; }
    if [ -z "$NO_SAN" ]; then
      kernel_ws_race_probe /tmp/kbuild_wsrc/dsparkctl_sparse_mla_$ARCH.so "$OUT/racecheck_ws.log"
    fi
    SO120=/tmp/kbuild_sm120regs/dsparkctl_sparse_mla_$ARCH.so
    { DSPARKCTL_KERNEL_SO=$SO120 $PY -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider 2>&1 | tail -4
      [ -n "$NO_SAN" ] || DSPARKCTL_KERNEL_SO=$SO120 compute-sanitizer --tool memcheck --leak-check no $PY -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -k sanitizer_subset 2>&1 | tail -4
    } > "$OUT/gpu_tests_sm120regs.log" 2>&1
    echo "== SM120 register budget build:"; cat "$OUT/gpu_tests_sm120regs.log"
    echo "sm120-regs tests: $(( $(date +%s) - t0 )) s"
  fi
fi
t0=$(date +%s)
$PY bench/bench_kernel.py ${PEER:+--triton-peer "$PEER"} $QUICK ${SWEEP:+--sweep} ${PRED:+--with-predecessor} --json "$OUT/kernel_bench.json" --md "$OUT/kernel_bench.md" > "$OUT/bench.log" 2>&1
tail -60 "$OUT/bench.log"
echo "bench: $(( $(date +%s) - t0 )) s"
