#!/usr/bin/env bash
# Session 28, device call 3 (carry .dev/s30/kernel_peer and .dev/s31/old, the latter
# `git archive 526fea4 dsparkctl kernels patches pyproject.toml`, v45 as tested): the full device run
# of v46 (one CombinedRow for every combine path; a row whose every split's lse is NaN gets lse NaN,
# not "empty"; the 3-8 split cluster candidate out of the source), then against v45 in the same call:
# the new NaN test on v45 (it should fail on the combine-kernel paths), bit-for-bit outputs on the
# 46 bench cases, and 2 alternating rounds of the short bench.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R/ab; export PYTHONUNBUFFERED=1
OLD=$PWD/.dev/s31/old; SO=dsparkctl_sparse_mla_sm_90a.so
(cd "$OLD" && PYTHONPATH=$OLD timeout 300 python3 "$OLDPWD/bench/build_kernel.py" sm_90a /tmp/kold $R/ab/build_old.log > /dev/null) &
OUT=$R/full PYTHONPATH=$PWD timeout 330 bash bench/kernel_device_run.sh \
  .dev/s30/kernel_peer/flash_mla_sm120_triton.py --with-predecessor > $R/full_run.log 2>&1
grep -vE "^\|" $R/full_run.log | grep -vE "^(SKIPPED|\.|s)" | tail -24
wait; [ -f /tmp/kold/$SO ] || echo "OLD BUILD FAILED"
export PYTHONPATH=$PWD
DSPARKCTL_KERNEL_SO=/tmp/kold/$SO timeout 90 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider \
  -k nan_in_every_split > $R/ab/nan_test_v45.log 2>&1
echo "NaN test on v45: $(grep -E '[0-9]+ (passed|failed)' $R/ab/nan_test_v45.log | tail -1)"
for side in old new; do
  so=/tmp/kold/$SO; [ $side = new ] && so=/tmp/kbuild/$SO
  DSPARKCTL_KERNEL_SO=$so timeout 120 python3 bench/compare_builds.py save $R/ab/$side.pt > $R/ab/save_$side.log 2>&1
done
echo "compare v45 vs v46: $(timeout 60 python3 bench/compare_builds.py compare $R/ab/old.pt $R/ab/new.pt 2>&1 | tail -1)"
for r in 1 2; do for side in old new; do
  so=/tmp/kold/$SO; [ $side = new ] && so=/tmp/kbuild/$SO
  DSPARKCTL_KERNEL_SO=$so timeout 90 python3 bench/bench_kernel.py --short --json $R/ab/${side}_run$r.json \
    --md $R/ab/${side}_run$r.md > $R/ab/bench_${side}_run$r.log 2>&1 || echo "BENCH FAILED $side $r"
done; done
python3 - $R/ab <<'PY' | tee $R/ab.txt
import json, sys
from pathlib import Path
d = Path(sys.argv[1])
def load(side):
    runs = [json.loads(p.read_text())["rows"] for p in sorted(d.glob(f"{side}_run*.json"))]
    return {(x["kind"], x["H"], x["extra"], x["T"]): [run[i]["ours_us"] for run in runs] for i, x in enumerate(runs[0])} if runs else {}
old, new = load("old"), load("new")
print("shape | v45 us (runs) | v46 us (runs) | best v46 - v45")
for k, n in new.items():
    o = old.get(k, [])
    print(f"{k[0]} H={k[1]} +{k[2]} T={k[3]} | {' / '.join(f'{v:.2f}' for v in o)} | {' / '.join(f'{v:.2f}' for v in n)} | {min(n) - min(o) if o else float('nan'):+.2f}")
PY
rm -f $R/full/*.so $R/ab/*.pt; cd $R && tar czf $OUT/r.tgz .
