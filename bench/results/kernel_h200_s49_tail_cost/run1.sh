#!/usr/bin/env bash
# Session 49, device call 1: what DSpark's 5-live main tail tile costs on v74 (the bound on any
# change that folds it into the tile before it). The halves kernel's automatic plan at DSpark
# T = 50 (and T = 25, +512 T = 25 / 50 for reference) with valid lengths 133 / 128 / 144, then
# per-tile events (-DDSPARKCTL_TL_EVENTS) at T = 50, valid 133 and 128. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=/tmp/s49r1; rm -rf $R; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
git log -1 --format='%H %s' > $R/tree.txt 2>/dev/null || true
timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kb74 $R/build.log > /dev/null || { echo BUILD FAILED; tail $R/build.log; exit 1; }
export DSPARKCTL_KERNEL_SO=/tmp/kb74/dsparkctl_sparse_mla_sm_90a.so
i=0
for v in 133 128 144 133; do
  i=$((i+1)); f=$R/sweep${i}_v$v
  timeout 120 python3 bench/plan_sweep.py --kind dspark --T 25 50 --layout large_ws_dh --valid $v --json $f.json --md $f.md > $f.log 2>&1
  echo "valid $v rc=$?"; grep '^| dspark' $f.md
done
OUT2=$R/tl; mkdir -p $OUT2
OUT=$OUT2 SHAPES='64 192 133 0 50;64 192 128 0 50' timeout 200 bash bench/kernel_timeline_ab.sh v74ev=-DDSPARKCTL_TL_EVENTS > /dev/null 2>&1
python3 bench/ws_timeline_summary.py --events v74ev=$OUT2/timeline_v74ev.jsonl | tee $R/events.txt
(cd $R && tar czf "$OUT/r.tgz" .)
