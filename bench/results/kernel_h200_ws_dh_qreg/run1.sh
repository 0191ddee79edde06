#!/usr/bin/env bash
# Session 39, device call 4 (apply candidate.patch first: it is not in the tree): v66's halves kernel with Q's first N k-steps of S from registers in
# warpgroup 0 (-DDSPARKCTL_WS_DH_QREG=16 / 28 / 32), against v66: GPU tests and outputs of each
# (bench/kernel_abn.sh, 3 alternating rounds of the --short rows: only DSpark T = 50 runs the halves
# kernel there), the WS timelines of v66 and q32 at DSpark T = 50 (valid 133), then the halves
# layout's DSpark sweep (config 7) on q32 with -DDSPARKCTL_WS_DIMS_PARTIALS=1, beside call 1's on
# v66 (bench/results/plan_sweep_s38_ws_dims/run1/). ~6 minutes. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
A=/tmp/abn; rm -rf $A; mkdir -p $A; export PYTHONPATH=$PWD
for v in "v66:" "q16:-DDSPARKCTL_WS_DH_QREG=16" "q28:-DDSPARKCTL_WS_DH_QREG=28" "q32:-DDSPARKCTL_WS_DH_QREG=32" \
         "q32p:-DDSPARKCTL_WS_DH_QREG=32 -DDSPARKCTL_WS_DIMS_PARTIALS=1"; do
  n=${v%%:*}; f=${v#*:}
  # shellcheck disable=SC2086
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_$n $A/build_$n.log $f > /dev/null &
  if [ "$n" = v66 ] || [ "$n" = q32 ]; then
    # shellcheck disable=SC2086
    nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE $f bench/kernel_timeline.cu -o /tmp/tl_$n > $A/build_tl_$n.log 2>&1 &
  fi
done
wait
OUT=$A ROUNDS=3 TESTS=1 COMPARE=1 PREBUILT=1 BENCH_SETS='--short' timeout 330 bash bench/kernel_abn.sh v66= \
  q16=-DDSPARKCTL_WS_DH_QREG=16 q28=-DDSPARKCTL_WS_DH_QREG=28 q32=-DDSPARKCTL_WS_DH_QREG=32 > $A/abn.log 2>&1
tail -16 $A/abn.log
for v in v66 q32; do
  timeout 40 /tmp/tl_$v 64 192 133 0 50 > $A/timeline_$v.jsonl 2>> $A/tl_err_$v.log
done
python3 bench/ws_timeline_summary.py --tiles v66=$A/timeline_v66.jsonl q32=$A/timeline_q32.jsonl > $A/tiles.txt 2>&1
grep -iE "tile|S |mask|P\b|total|staged|written" $A/tiles.txt | head -30
DSPARKCTL_KERNEL_SO=/tmp/kabn_q32p/dsparkctl_sparse_mla_sm_90a.so timeout 90 python3 bench/plan_sweep.py --kind dspark \
  --layout large_ws_dh --replays 2 --json $A/sweep_q32p.json --md $A/sweep_q32p.md > $A/sweep_q32p.log 2>&1
python3 - $A/sweep_q32p.json <<'PY' 2>/dev/null
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    print(r["kind"], r["H"], r["extra"], r["T"], "auto", r["auto_us"], " ".join(f"s{f['splits']}:{f['us']}" for f in r["forced"]))
PY
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
