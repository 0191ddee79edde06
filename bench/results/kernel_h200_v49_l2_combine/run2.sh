#!/usr/bin/env bash
# Session 29, device call 3 (carry .dev/s30/kernel_peer and .dev/s31/v46 = `git archive` of v46's
# dsparkctl / kernels / patches / pyproject.toml):
#   bash bench/results/kernel_h200_v49_l2_combine/run2.sh
# The full device run of -DDSPARKCTL_WS_COMBINE_L2=1 with its peer loads batched (l2b: every load of
# the peer's rows before the first store), then against v46 in the same call: bit-for-bit outputs
# (46 bench cases) and 3 alternating rounds of the short bench; the combine's timeline marks at the
# 2-split shapes; the WS kernel forced at each split count at the DSpark shapes.
set -uo pipefail
FL=-DDSPARKCTL_WS_COMBINE_L2=1
R=/tmp/r; rm -rf $R; mkdir -p $R/ab $R/marks; export PYTHONUNBUFFERED=1
OLD=$PWD/.dev/s31/v46; SO=dsparkctl_sparse_mla_sm_90a.so
(cd "$OLD" && PYTHONPATH=$OLD timeout 300 python3 "$OLDPWD/bench/build_kernel.py" sm_90a /tmp/kold $R/ab/build_old.log > /dev/null) &
timeout 300 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_CLUSTER_MARKS $FL bench/kernel_timeline.cu -o /tmp/tlm_l2b > $R/marks/build_l2b.log 2>&1 &
OUT=$R/full KERNEL_NVCC_EXTRA="$FL" PYTHONPATH=$PWD timeout 300 bash bench/kernel_device_run.sh \
  .dev/s30/kernel_peer/flash_mla_sm120_triton.py --with-predecessor > $R/full_run.log 2>&1
grep -vE "^\|" $R/full_run.log | grep -vE "^(SKIPPED|\.|s)" | tail -22
if ! grep -qE "^[0-9]+ passed" $R/full/gpu_tests.log || grep -qE "[0-9]+ failed" $R/full/gpu_tests.log; then
  echo "GPU TESTS DID NOT PASS: stopping"; rm -f $R/full/*.so; cd $R && tar czf $OUT/r.tgz . && exit 1
fi
wait; [ -f /tmp/kold/$SO ] || echo "OLD BUILD FAILED"
export PYTHONPATH=$PWD
for side in old new; do
  so=/tmp/kold/$SO; [ $side = new ] && so=/tmp/kbuild/$SO
  DSPARKCTL_KERNEL_SO=$so timeout 120 python3 bench/compare_builds.py save $R/ab/$side.pt > $R/ab/save_$side.log 2>&1
done
echo "compare v46 vs l2b: $(timeout 60 python3 bench/compare_builds.py compare $R/ab/old.pt $R/ab/new.pt 2>&1 | tail -1)"
for r in 1 2 3; do for side in old new; do
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
    return {(x["kind"], x["H"], x["extra"], x["T"]): ([run[i]["ours_us"] for run in runs], x["plan"]) for i, x in enumerate(runs[0])} if runs else {}
old, new = load("old"), load("new")
print("shape | plan | v46 us (runs) | l2b us (runs) | best l2b - v46")
for k, (n, plan) in new.items():
    o = old.get(k, ([], ""))[0]
    print(f"{k[0]} H={k[1]} +{k[2]} T={k[3]} | {plan} | {' / '.join(f'{v:.2f}' for v in o)} | {' / '.join(f'{v:.2f}' for v in n)} | {min(n) - min(o) if o else float('nan'):+.2f}")
PY
rm -f $R/full/*.so $R/ab/*.pt; (cd $R && tar czf $OUT/r.tgz .)
for sh in "64 192 133 0 50 1 2" "64 192 133 0 25 1 2" "64 192 133 512 50" "128 128 128 1024 32" "64 128 128 512 64"; do
  timeout 20 /tmp/tlm_l2b $sh >> $R/marks/timeline_l2b.jsonl || echo "TL FAILED $sh"
done
python3 - $R/marks/timeline_l2b.jsonl <<'PY' | tee $R/marks/marks.txt
import json, sys
from pathlib import Path
for line in Path(sys.argv[1]).read_text().splitlines():
    a = json.loads(line); ph = a["phase_cycles"]
    print("l2b", a["H"], a["extra"], a["T"], "splits", a["splits"], "us", a["stream_us_per_call"], "both_staged", ph["ws_range_at"],
          "sync1", ph["ws_q_regs_at"], "rows_written", ph["ws_q_ready_at"], "end", ph["ws_written_at"])
PY
(cd $R && tar czf $OUT/r.tgz .)
DSPARKCTL_KERNEL_SO=/tmp/kbuild/$SO timeout 90 python3 bench/plan_sweep.py --kind dspark --layout large --json $R/sweep_l2b.json --md $R/sweep_l2b.md > $R/sweep_l2b.log 2>&1 || echo "SWEEP FAILED"
python3 -c "
import json; d = json.load(open('$R/sweep_l2b.json'))
for x in d['rows']: print('l2b dspark +%d T=%d auto %.2f |' % (x['extra'], x['T'], x['auto_us']), ' '.join('s%d:%.2f' % (g['splits'], g['us']) for g in x['forced']))
" | tee $R/sweep_l2b.txt
rm -f $R/full/*.so $R/ab/*.pt; cd $R && tar czf $OUT/r.tgz .
