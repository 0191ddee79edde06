#!/usr/bin/env bash
# The full device run of this tree's kernel, then the same-call A/B against an older tree: the
# pattern of sessions 28-29's device calls (bench/results/kernel_h200_v48_ws2_push/run1.sh,
# kernel_h200_v49_l2_combine/run2.sh), written once.
#   usage: OUT=... bash bench/kernel_full_ab.sh OLD_TREE [FLAGS]
#     OLD_TREE  a `git archive` of an older commit's dsparkctl/ kernels/ patches/ pyproject.toml
#               (e.g. .dev/s31/v46; carry it and .dev/s30/kernel_peer to the device)
#     FLAGS     comma-separated nvcc flags added to every build of this tree (none: its defaults)
#   env: ROUNDS (3) alternating rounds of bench_kernel.py --short; OLD_NAME / NEW_NAME (old / new)
#        the columns' names; PEER (.dev/s30/kernel_peer/flash_mla_sm120_triton.py) the Triton peer.
# Steps: the older tree's build in the background; bench/kernel_device_run.sh on this tree (GPU
# tests, memcheck, racecheck, SM120-register build, full bench table; stops here if the GPU tests
# do not pass); both builds' outputs bit for bit (bench/compare_builds.py); the alternating
# rounds and a table (best of the rounds, new - old). Results under /tmp/r, packed into
# $OUT/r.tgz after every step, so a timeout keeps what ran.
set -uo pipefail
OLD=${1:-}
if [ -z "$OLD" ] || [ ! -f "$OLD/kernels/sparse_mla_decode.cu" ]; then
  echo "usage: OUT=... bash bench/kernel_full_ab.sh OLD_TREE [FLAGS]  (OLD_TREE: an archived tree with kernels/sparse_mla_decode.cu; got '${OLD}')" >&2
  exit 2
fi
[ -n "${OUT:-}" ] || { echo "kernel_full_ab.sh: set OUT (the folder r.tgz goes to)" >&2; exit 2; }
# relative paths are the caller's: resolved before the cd to the repository root
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
OLD=$(cd "$OLD" && pwd)
PEER=${PEER:-.dev/s30/kernel_peer/flash_mla_sm120_triton.py}
cd "$(dirname "$0")/.."
[ -f "$PEER" ] || { echo "kernel_full_ab.sh: no Triton peer at $PEER (carry .dev/s30/kernel_peer or set PEER)" >&2; exit 2; }
PEER=$(cd "$(dirname "$PEER")" && pwd)/$(basename "$PEER")
FL=${2:-}; FL=${FL//,/ }
ON=${OLD_NAME:-old}; NN=${NEW_NAME:-new}
R=/tmp/r; rm -rf $R; mkdir -p $R/ab; export PYTHONUNBUFFERED=1
SO=dsparkctl_sparse_mla_sm_90a.so
pack() { (cd $R && tar czf "$OUT/r.tgz" .); }
(cd "$OLD" && PYTHONPATH=$OLD timeout 300 python3 "$OLDPWD/bench/build_kernel.py" sm_90a /tmp/kold $R/ab/build_old.log > /dev/null) &
OLD_BUILD=$!
OUT=$R/full KERNEL_NVCC_EXTRA="$FL" PYTHONPATH=$PWD timeout 300 bash bench/kernel_device_run.sh "$PEER" --with-predecessor \
  > $R/full_run.log 2>&1
grep -vE "^\|" $R/full_run.log | grep -vE "^(SKIPPED|\.|s)" | tail -22
if ! grep -qE "^[0-9]+ passed" $R/full/gpu_tests.log || grep -qE "[0-9]+ (failed|errors?)" $R/full/gpu_tests.log; then
  echo "GPU TESTS DID NOT PASS: stopping"; kill $OLD_BUILD 2> /dev/null; rm -f $R/full/*.so; pack; exit 1
fi
wait; [ -f /tmp/kold/$SO ] || { echo "OLD BUILD FAILED"; tail -20 $R/ab/build_old.log; rm -f $R/full/*.so; pack; exit 1; }
export PYTHONPATH=$PWD
for side in old new; do
  so=/tmp/kold/$SO; [ $side = new ] && so=/tmp/kbuild/$SO
  DSPARKCTL_KERNEL_SO=$so timeout 120 python3 bench/compare_builds.py save $R/ab/$side.pt > $R/ab/save_$side.log 2>&1
done
echo "compare $ON vs $NN: $(timeout 60 python3 bench/compare_builds.py compare $R/ab/old.pt $R/ab/new.pt 2>&1 | tail -1)" | tee $R/compare.txt
rm -f $R/full/*.so $R/ab/*.pt; pack
for r in $(seq "${ROUNDS:-3}"); do for side in old new; do
  so=/tmp/kold/$SO; [ $side = new ] && so=/tmp/kbuild/$SO
  DSPARKCTL_KERNEL_SO=$so timeout 90 python3 bench/bench_kernel.py --short --json $R/ab/${side}_run$r.json \
    --md $R/ab/${side}_run$r.md > $R/ab/bench_${side}_run$r.log 2>&1 || echo "BENCH FAILED $side $r"
done; pack; done
python3 bench/ab_table.py $R/ab "$ON" "$NN" | tee $R/ab.txt
pack
