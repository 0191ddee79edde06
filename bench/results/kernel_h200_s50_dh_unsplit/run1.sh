#!/usr/bin/env bash
# Session 50, device call 2: the candidate -DDSPARKCTL_WS_DH_UNSPLIT=1 (the halves kernel, which the
# plan launches only unsplit, with its split paths compiled out: 10,408 -> 8,704 SASS instructions,
# same registers, no spills) against v74 (this tree without the flag: v74's SASS, 22 of 22), through
# bench/kernel_candidate_check.sh (4 alternating rounds), then plain phase timelines of both at DSpark
# T = 50 (valid 133 three times, 128 once). Packs $OUT/r.tgz and $OUT/r2.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
R=/tmp/s50r2; rm -rf $R; mkdir -p $R
NAME=us1 FLAGS=-DDSPARKCTL_WS_DH_UNSPLIT=1 BASE=v74 ROUNDS=4 timeout 450 bash bench/kernel_candidate_check.sh
OUT2=$R/tl; mkdir -p $OUT2
OUT=$OUT2 SHAPES='64 192 133 0 50;64 192 128 0 50;64 192 133 0 50;64 192 133 0 50' timeout 120 \
  bash bench/kernel_timeline_ab.sh v74= us1=-DDSPARKCTL_WS_DH_UNSPLIT=1 > /dev/null 2>&1
grep -c C75 $OUT2/build_tl_*.log
for f in $OUT2/timeline_v74.jsonl $OUT2/timeline_us1.jsonl; do
  python3 -c "
import json
for l in open('$f'):
    d=json.loads(l); print('$(basename $f .jsonl)', d['valid'], d['stream_us_per_call'], d['main_span_ns'], d['cta_ns_median'], d['cta_ns_max'], d.get('cta_end_ns'))
"
done | tee $R/spans.txt
(cd $R && tar czf "$OUT/r2.tgz" .)
