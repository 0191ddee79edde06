#!/usr/bin/env bash
# v72's phase timelines (session 46, call 3): bench/kernel_timeline.sh over its 19 shapes (the
# last timeline of every shape was v53's, session 31), to record where each call's time goes today:
# the main kernel's span, the wait and the combine after it, and the per-phase cycles. Writes
# $OUT/timeline.jsonl, $OUT/gpu.txt, $OUT/build.log.
set -uo pipefail
cd "$(dirname "$0")/../../.."
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
OUT=$OUT timeout 400 bash bench/kernel_timeline.sh sm_90a > $OUT/build.log 2>&1; echo "timeline rc=$? $(( $(date +%s) - t0 )) s"
wc -l < $OUT/timeline.jsonl
python3 - "$OUT/timeline.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r["H"], r["extra"], r["T"], "cfg", r["config"], "s", r["splits"], "ctas", r["ctas"], "us", r["stream_us_per_call"],
          "main", r["main_span_ns"], "cta_med", r["cta_ns_median"], "tiles", r["tiles_max"],
          "comb_end_after_main", r.get("combine_end_after_main_end_ns"))
PY
echo "total $(( $(date +%s) - t0 )) s"
