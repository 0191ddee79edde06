#!/usr/bin/env bash
# Session 37, device call 6: v65's phase timelines (bench/kernel_timeline.cu) at DSpark T = 50 (WS)
# and T = 25 (LARGE16), valid lengths 133 (a 5-live third tile) and 128 (none): where the partial
# tile's remaining ~1.9 us at T = 50 go. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
R=$OUT/r; mkdir -p $R
timeout 150 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl65 > $R/build.log 2>&1 || { echo BUILD FAILED; tail $R/build.log; exit 1; }
: > $R/timeline.jsonl
for args in "64 192 133 0 50" "64 192 128 0 50" "64 192 133 0 25" "64 192 128 0 25"; do
  # shellcheck disable=SC2086
  timeout 40 /tmp/tl65 $args >> $R/timeline.jsonl 2>> $R/err.log
done
head -c 300 $R/err.log
python3 bench/ws_timeline_summary.py --tiles v65=$R/timeline.jsonl > $R/tiles.txt 2>&1; cat $R/tiles.txt
python3 -c "
import json,sys
for l in open('$R/timeline.jsonl'):
    d=json.loads(l); print(d['T'], d['valid'], d['stream_us_per_call'], d['cta_ns_median'], {k: v[0] for k, v in d['phase_cycles'].items() if v[0]})
"
(cd $OUT && tar czf r.tgz r)
