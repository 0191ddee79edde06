#!/usr/bin/env bash
# Same-call A/B/N of build variants of this tree's kernel (nvcc macro sets) on the GPU at hand:
# builds every variant, optionally runs the GPU tests on each non-base one, then alternates the
# benches (round 1: every variant, round 2: every variant, ...) so clock and neighbour drift hit
# all alike, and prints one row per shape: each variant's best time and its change vs the first.
#   usage: OUT=... [ROUNDS=2] [TESTS=1] [TEST_TIMEOUT=240] [COMPARE=1] [BENCH_SETS='--short;--short --heads 64 128'] \
#          bash bench/kernel_abn.sh NAME=FLAGS [NAME=FLAGS ...]     (FLAGS: comma-separated, may be empty)
#   e.g.   bash bench/kernel_abn.sh base= swap=-DDSPARKCTL_WS_RAW_SWAP both=-DA,-DB
# PREBUILT=1: a variant whose /tmp/kabn_NAME/<so> exists is not rebuilt (build them in parallel first).
# COMPARE=1: also bench/compare_builds.py, every variant's outputs against the first's, bit for bit.
# The first variant is the baseline. BENCH_SETS: ';'-separated bench_kernel.py flag sets, each
# run per variant per round (a shape in two sets is reported from the first).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/kernel_abn_out}
ROUNDS=${ROUNDS:-2}
BENCH_SETS=${BENCH_SETS:---short;--short --heads 64 128}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
[ $# -ge 2 ] || { echo "usage: bash bench/kernel_abn.sh NAME=FLAGS NAME=FLAGS [...]" >&2; exit 2; }
ARCH=$(python3 -c 'import torch; from dsparkctl.kernel.build import arch_for_capability as a; print(a(*torch.cuda.get_device_capability()))')
SO=dsparkctl_sparse_mla_$ARCH.so
NAMES=()
for v in "$@"; do
  name=${v%%=*}; flags=${v#*=}
  NAMES+=("$name")
  t0=$(date +%s)
  if [ -n "${PREBUILT:-}" ] && [ -f "/tmp/kabn_$name/$SO" ]; then echo "build $name ($flags): prebuilt"; continue; fi
  # shellcheck disable=SC2086
  python3 bench/build_kernel.py "$ARCH" "/tmp/kabn_$name" "$OUT/build_$name.log" ${flags//,/ } > /dev/null \
    || { echo "BUILD FAILED ($name)"; tail -40 "$OUT/build_$name.log"; exit 1; }
  echo "build $name ($flags): $(( $(date +%s) - t0 )) s; spills: $(grep -c 'bytes spill stores' "$OUT/build_$name.log") functions, $(grep -E '[1-9][0-9]* bytes spill stores' "$OUT/build_$name.log" | sed -E 's/.* ([0-9]+) bytes spill stores.*/\1/' | tr '\n' ' ')"
done
if [ -n "${TESTS:-}" ]; then
  for name in "${NAMES[@]:1}"; do
    t0=$(date +%s)
    # a candidate that hangs (a barrier no thread reaches) costs TEST_TIMEOUT, not the call
    DSPARKCTL_KERNEL_SO=/tmp/kabn_$name/$SO timeout "${TEST_TIMEOUT:-240}" python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider --maxfail=8 > "$OUT/gpu_tests_$name.log" 2>&1 \
      || echo "$name" >> "$OUT/failed_variants.txt"
    echo "gpu tests $name: $(grep -E '[0-9]+ (passed|failed)' "$OUT/gpu_tests_$name.log" | tail -1) ($(( $(date +%s) - t0 )) s)$(grep -qx "$name" "$OUT/failed_variants.txt" 2> /dev/null && echo '; FAILED or timed out: not benched')"
  done
fi
if [ -n "${COMPARE:-}" ]; then
  # bit-for-bit comparison with the first variant (bench/compare_builds.py): for candidates whose
  # arithmetic is claimed unchanged
  DSPARKCTL_KERNEL_SO=/tmp/kabn_${NAMES[0]}/$SO python3 bench/compare_builds.py save "$OUT/cmp_${NAMES[0]}.pt" > /dev/null 2>&1 \
    || echo "compare: the first variant's run failed"
  for name in "${NAMES[@]:1}"; do
    if grep -qx "$name" "$OUT/failed_variants.txt" 2> /dev/null; then continue; fi
    DSPARKCTL_KERNEL_SO=/tmp/kabn_$name/$SO timeout "${TEST_TIMEOUT:-240}" python3 bench/compare_builds.py save "$OUT/cmp_$name.pt" > /dev/null 2>&1 \
      && echo "compare $name vs ${NAMES[0]}: $(python3 bench/compare_builds.py compare "$OUT/cmp_${NAMES[0]}.pt" "$OUT/cmp_$name.pt" | head -4 | tr '\n' ' ')" \
      || echo "compare $name: its run failed or timed out"
  done
fi
IFS=';' read -r -a SETS <<< "$BENCH_SETS"
for r in $(seq "$ROUNDS"); do
  for name in "${NAMES[@]}"; do
    if grep -qx "$name" "$OUT/failed_variants.txt" 2> /dev/null; then continue; fi  # failed or hung tests: not benched
    for i in "${!SETS[@]}"; do
      # shellcheck disable=SC2086
      DSPARKCTL_KERNEL_SO=/tmp/kabn_$name/$SO python3 bench/bench_kernel.py ${SETS[$i]} \
        --json "$OUT/${name}_s${i}_r$r.json" --md "$OUT/${name}_s${i}_r$r.md" > "$OUT/bench_${name}_s${i}_r$r.log" 2>&1 \
        || { echo "BENCH FAILED ($name set $i round $r)"; tail -20 "$OUT/bench_${name}_s${i}_r$r.log"; }
    done
  done
done
python3 - "$OUT" "$ROUNDS" "${#SETS[@]}" "${NAMES[@]}" <<'EOF'
import json, sys
from pathlib import Path
out, rounds, nsets, names = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
def load(name):
    res, bad = {}, []
    for s in range(nsets):
        for r in range(1, rounds + 1):
            f = out / f"{name}_s{s}_r{r}.json"
            if not f.exists():
                continue
            for x in json.loads(f.read_text())["rows"]:
                k = (x["kind"], x["H"], x["extra"], x["T"])
                if k in res and res[k][0] != s:
                    continue
                res.setdefault(k, (s, x.get("plan", ""), []))[2].append(x["ours_us"])
                if not x.get("ok", True):
                    bad.append(k)
    return res, bad
data = {n: load(n) for n in names}
base = data[names[0]][0]
print("shape | plan | " + " | ".join(f"{n} us (best; runs)" for n in names) + " | " + " | ".join(f"{n} - {names[0]}" for n in names[1:]))
for k, (_, plan, b) in base.items():
    cells, deltas = [], []
    for n in names:
        v = data[n][0].get(k, (0, "", []))[2]
        cells.append(f"{min(v):.2f} ({' / '.join(f'{u:.2f}' for u in v)})" if v else "-")
        if n != names[0]:
            deltas.append(f"{min(v) - min(b):+.2f}" if v and b else "-")
    print(f"{k[0]} H={k[1]} +{k[2]} T={k[3]} | {plan} | " + " | ".join(cells) + " | " + " | ".join(deltas))
for n in names:
    if data[n][1]:
        print(f"NOT OK ({n}): {sorted(set(data[n][1]))}")
EOF
