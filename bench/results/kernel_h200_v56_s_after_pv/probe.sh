#!/usr/bin/env bash
# session 32 (device): warpgroup 1's P.V phase split into issue and wait (-DDSPARKCTL_TL_SPLIT_PV,
# a timeline-only build: slots 13 / 14 carry them instead of the producer's first two phases), on
# v53 and on the sap candidate (candidates.patch applied to a copy), to settle whether that phase's
# ~3,900 cycles a tile are the wgmma's. Per tile: wg1 issue = rescale + lo part + wgmma issue,
# wg1 wait = wgmma.wait_group, wg1 rest = P-free hand-off and the empty arrive.
set -uo pipefail
A=$OUT/r; mkdir -p $A
rm -rf /tmp/t2 && mkdir -p /tmp/t2 && cp -r kernels bench /tmp/t2/
(cd /tmp/t2 && patch -p1 -s < bench/results/kernel_h200_v56_s_after_pv/candidates.patch) || echo "patch failed"
timeout 200 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_SPLIT_PV bench/kernel_timeline.cu -o /tmp/tl_v53s > $A/build_v53s.log 2>&1 &
timeout 200 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_SPLIT_PV -DDSPARKCTL_WS_S_AFTER_PV=1 /tmp/t2/bench/kernel_timeline.cu -o /tmp/tl_saps > $A/build_saps.log 2>&1 &
wait
for v in v53s saps; do
  : > $A/timeline_$v.jsonl
  for args in "64 192 133 0 50" "64 192 133 512 50" "128 128 128 1024 64"; do
    # shellcheck disable=SC2086
    timeout 60 /tmp/tl_$v $args >> $A/timeline_$v.jsonl 2>> $A/err.log
  done
done
python3 - $A <<'PY'
import json, sys
from pathlib import Path
a = Path(sys.argv[1])
for v in ("v53s", "saps"):
    for line in (a / f"timeline_{v}.jsonl").read_text().splitlines():
        r = json.loads(line); ph = r["phase_cycles"]; n = max(int(r["tiles_max"]), 1)
        g = lambda k: round(ph[k][0] / n)
        print(v, r["H"], r["extra"], r["T"], "us", r["stream_us_per_call"], "tiles", n,
              "wg0: wait", g("ids_issued"), "S", g("ids_published"), "mask", g("q_landed"), "Pfree", g("first_copy_issue"),
              "P", g("q_to_smem"), "PV", g("tile_landed"),
              "| wg1: wait", g("next_copy_issue"), "issue", g("p"), "wgmma wait", g("pv"), "rest", g("s"), "copies", g("q_loads_issued"))
PY
tar czf $OUT/r.tgz -C $OUT r
