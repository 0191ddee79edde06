#!/usr/bin/env bash
# Session 49, device call 5: whether the tail S16 candidate moved the slowest CTA at DSpark T = 50 (call
# 4's bench did not move while its median CTA's rows were staged ~460 cycles earlier). Applies
# candidate.patch to the device's copy of the tree (v74 + the flag, off by default), then phase
# timelines (per-call time, main kernel span, CTA median / max) of v74 and of the candidate at valid
# lengths 133 and 128, three runs each. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
git apply bench/results/kernel_h200_s49_tail_s16/candidate.patch || exit 1
R=/tmp/s49r5; rm -rf $R; mkdir -p $R
OUT=$R SHAPES='64 192 133 0 50;64 192 128 0 50;64 192 133 0 50;64 192 128 0 50;64 192 133 0 50' timeout 200 \
  bash bench/kernel_timeline_ab.sh v74= ts16=-DDSPARKCTL_WS_DH_TAIL_S16=1 > /dev/null 2>&1
for f in $R/timeline_*.jsonl; do
  python3 -c "
import json,sys
for l in open('$f'):
    d=json.loads(l); print('$(basename $f .jsonl)', d['valid'], d['stream_us_per_call'], d['main_span_ns'], d['cta_ns_median'], d['cta_ns_max'])
"
done | tee $R/spans.txt
(cd $R && tar czf "$OUT/r.tgz" .)
