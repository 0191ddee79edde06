#!/usr/bin/env bash
# Session 50, device call 5 (the session's last device minutes): which half of the halves kernel the
# HALF_BODIES candidate made fast and which slow (call 4's CTA ends were bimodal): plain timelines of
# v75 and the candidate at DSpark T = 50, valid 133, with the timeline tool's new per-half medians.
set -uo pipefail
cd "$(dirname "$0")/../../.."
grep -q DSPARKCTL_WS_DH_HALF_BODIES kernels/sparse_mla_decode.cu || git apply bench/results/kernel_h200_s50_dh_half_bodies/candidate.patch || exit 1  # (removed from the source after the session)
R=/tmp/s50r5; rm -rf $R; mkdir -p $R
OUT=$R SHAPES='64 192 133 0 50;64 192 133 0 50' timeout 150 \
  bash bench/kernel_timeline_ab.sh v75= hb1=-DDSPARKCTL_WS_DH_HALF_BODIES=1 > /dev/null 2>&1
# (the session ran an inline copy of this; --spans prints the same fields)
python3 bench/ws_timeline_summary.py --spans v75=$R/timeline_v75.jsonl hb1=$R/timeline_hb1.jsonl | tee $R/halves.txt
(cd $R && tar czf "$OUT/r.tgz" .)
