#!/usr/bin/env bash
# Same-call A/B of two kernel source trees on the GPU at hand: builds both, optionally runs the
# GPU tests on the new one, then alternates the short bench (old, new, old, new, ...) so clock
# and neighbour drift hit both sides alike, and prints a per-row table. Results in $OUT.
#   usage: OUT=... [TESTS=1] [ROUNDS=2] [NVCC_EXTRA_NEW='-D...'] [NVCC_EXTRA_OLD='-D...'] bash bench/kernel_ab.sh OLD_TREE [NEW_TREE]
# NVCC_EXTRA_NEW / NVCC_EXTRA_OLD: extra nvcc flags for that build only (space-separated), e.g.
# -DDSPARKCTL_SMALL_MIN_BLOCKS=1 to run SM120's register budget on an H200 (on both sides: an
# A/B of a SMALL-layout change under the register allocation SM120 gets).
# BENCH_EXTRA: extra bench_kernel.py flags for both sides (e.g. --sweep: forced layouts too).
# OLD_TREE / NEW_TREE: checkouts of the repository (e.g. `git archive REV | tar -x -C DIR`);
# both .so files are driven by NEW_TREE's Python wrapper and bench (the op signature is shared).
set -uo pipefail
OLD=$(cd "$1" && pwd)
NEW=$(cd "${2:-$(dirname "$0")/..}" && pwd)
HERE=$(cd "$(dirname "$0")/.." && pwd)  # this tree: its bench/build_kernel.py builds either side
OUT=${OUT:-$PWD/kernel_ab_out}
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
ARCH=$(PYTHONPATH=$NEW python3 -c 'import torch; from dsparkctl.kernel.build import arch_for_capability as a; print(a(*torch.cuda.get_device_capability()))')
for side in old new; do
  tree=$OLD; [ "$side" = new ] && tree=$NEW
  t0=$(date +%s)
  extra=${NVCC_EXTRA_OLD:-}; [ "$side" = new ] && extra=${NVCC_EXTRA_NEW:-}
  # shellcheck disable=SC2086
  (cd "$tree" && PYTHONPATH=$tree python3 "$HERE/bench/build_kernel.py" "$ARCH" "/tmp/kab_$side" "$OUT/build_$side.log" $extra > /dev/null) \
    || { echo "BUILD FAILED ($side)"; tail -40 "$OUT/build_$side.log"; exit 1; }
  echo "build $side: $(( $(date +%s) - t0 )) s"
  grep -E "registers|spill" "$OUT/build_$side.log" | grep -B0 "spill" | sort | uniq -c | head -4
done
SO=dsparkctl_sparse_mla_$ARCH.so
if [ -n "${TESTS:-}" ]; then
  t0=$(date +%s)
  (cd "$NEW" && DSPARKCTL_KERNEL_SO=/tmp/kab_new/$SO PYTHONPATH=$NEW python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider --maxfail=8 2>&1) \
    | tee "$OUT/gpu_tests.log" | tail -25
  echo "gpu tests: $(( $(date +%s) - t0 )) s"
fi
for r in $(seq "$ROUNDS"); do
  for side in old new; do
    DSPARKCTL_KERNEL_SO=/tmp/kab_$side/$SO PYTHONPATH=$NEW python3 "$NEW/bench/bench_kernel.py" --short ${BENCH_EXTRA:-} \
      --json "$OUT/${side}_run$r.json" --md "$OUT/${side}_run$r.md" > "$OUT/bench_${side}_run$r.log" 2>&1 \
      || { echo "BENCH FAILED ($side $r)"; tail -20 "$OUT/bench_${side}_run$r.log"; }
  done
done
python3 - "$OUT" "$ROUNDS" <<'EOF'
import json, sys
from pathlib import Path
out, rounds = Path(sys.argv[1]), int(sys.argv[2])
def load(side):
    runs = [json.loads((out / f"{side}_run{r}.json").read_text())["rows"] for r in range(1, rounds + 1)
            if (out / f"{side}_run{r}.json").exists()]
    return {(x["kind"], x["H"], x["extra"], x["T"]): [run[i]["ours_us"] for run in runs] for i, x in enumerate(runs[0])} if runs else {}
old, new = load("old"), load("new")
print("shape | old us (runs) | new us (runs) | change")
for k in new:
    o, n = old.get(k, []), new[k]
    d = (min(n) - min(o)) if o else float("nan")
    print(f"{k[0]} H={k[1]} +{k[2]} T={k[3]} | {' / '.join(f'{v:.2f}' for v in o)} | {' / '.join(f'{v:.2f}' for v in n)} | {d:+.2f}")
EOF
