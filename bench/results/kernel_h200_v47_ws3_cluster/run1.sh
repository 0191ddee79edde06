#!/usr/bin/env bash
# Session 28, device call 4 (carry .dev/s31/c4: `git archive` of v46's dsparkctl / kernels with
# ../kernel_h200_v46_cluster_n/cluster_n.patch applied). Question: do clusters of 3 fit where
# clusters of 4-8 did not, and does a 3-split WS call with the in-kernel combine beat the plan's
# choice at DSpark sizes (T = 25: 25 clusters of 3)? Runs bench/cluster_occupancy.cu (clusters of
# S WS CTAs the H200 holds at once), then bench/plan_sweep.py --kind dspark --layout large (the WS
# kernel forced at every split count) on v46 and on c4 (-DDSPARKCTL_WS_CLUSTER_MAX=4).
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1
C4=$PWD/.dev/s31/c4
PYTHONPATH=$PWD timeout 300 python3 bench/build_kernel.py sm_90a /tmp/kv46 $R/build_v46.log > /dev/null &
(cd "$C4" && PYTHONPATH=$C4 timeout 300 python3 "$OLDPWD/bench/build_kernel.py" sm_90a /tmp/kc4 $R/build_c4.log -DDSPARKCTL_WS_CLUSTER_MAX=4 > /dev/null) &
timeout 300 nvcc -O3 -std=c++17 -arch=sm_90a bench/cluster_occupancy.cu -o /tmp/cocc > $R/cocc_build.log 2>&1 &
wait
timeout 30 /tmp/cocc | tee $R/cluster_occupancy.json
SO=dsparkctl_sparse_mla_sm_90a.so; export PYTHONPATH=$PWD
for v in v46 c4; do
  DSPARKCTL_KERNEL_SO=/tmp/k$v/$SO timeout 200 python3 bench/plan_sweep.py --kind dspark --layout large \
    --json $R/sweep_$v.json --md $R/sweep_$v.md > $R/sweep_$v.log 2>&1 || echo "SWEEP FAILED $v"
done
python3 - $R <<'PY' | tee $R/sweep_ab.txt
import json, sys
from pathlib import Path
r = Path(sys.argv[1])
a, b = (json.loads((r / f"sweep_{v}.json").read_text())["rows"] for v in ("v46", "c4"))
print("shape | auto v46 | auto c4 | WS forced, splits: v46 / c4 us")
for x, y in zip(a, b):
    f = {g["splits"]: g["us"] for g in x["forced"]}; h = {g["splits"]: g["us"] for g in y["forced"]}
    cells = " ".join(f"s{s}:{f[s]:.2f}/{h.get(s, float('nan')):.2f}" for s in sorted(f))
    print(f"dspark +{x['extra']} T={x['T']} | {x['auto_us']} | {y['auto_us']} | {cells}")
PY
cd $R && tar czf $OUT/r.tgz .
