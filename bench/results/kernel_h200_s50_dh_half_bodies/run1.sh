#!/usr/bin/env bash
# Session 50, device call 4: the candidate -DDSPARKCTL_WS_DH_HALF_BODIES=1 (the halves kernel as two
# bodies behind one branch on blockIdx.z, each with its half of O's dims a constant: 8,704 -> 13,664
# SASS instructions, each CTA running one body) against v75 (this tree without the flag: v75's SASS,
# 22 of 22), through bench/kernel_candidate_check.sh (3 alternating rounds), then plain phase
# timelines of both at DSpark T = 50 (valid 133 twice, 128 once). Packs $OUT/r.tgz and $OUT/r2.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
grep -q DSPARKCTL_WS_DH_HALF_BODIES kernels/sparse_mla_decode.cu || git apply bench/results/kernel_h200_s50_dh_half_bodies/candidate.patch || exit 1  # (removed from the source after the session)
export PYTHONPATH=$PWD
R=/tmp/s50r4; rm -rf $R; mkdir -p $R
NAME=hb1 FLAGS=-DDSPARKCTL_WS_DH_HALF_BODIES=1 BASE=v75 ROUNDS=3 timeout 420 bash bench/kernel_candidate_check.sh
OUT2=$R/tl; mkdir -p $OUT2
OUT=$OUT2 SHAPES='64 192 133 0 50;64 192 128 0 50;64 192 133 0 50' timeout 120 \
  bash bench/kernel_timeline_ab.sh v75= hb1=-DDSPARKCTL_WS_DH_HALF_BODIES=1 > /dev/null 2>&1
grep -c C75 $OUT2/build_tl_*.log
for f in $OUT2/timeline_v75.jsonl $OUT2/timeline_hb1.jsonl; do
  python3 -c "
import json
for l in open('$f'):
    d=json.loads(l); print('$(basename $f .jsonl)', d['valid'], d['stream_us_per_call'], d['main_span_ns'], d['cta_ns_median'], d['cta_ns_max'], d.get('cta_end_ns'))
"
done | tee $R/spans.txt
(cd $R && tar czf "$OUT/r2.tgz" .)
