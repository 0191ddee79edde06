#!/usr/bin/env bash
# Session 50, device call 1: the candidate -DDSPARKCTL_WS_DH_TAIL_S_AHEAD=2 (the halves kernel runs a
# <= 16-live tail's S as its own two m64n16k16 chains right after the full tile's S, before that
# tile's mask and P; the tail's step skips S) against v74 (this tree without the flag: v74's SASS),
# through bench/kernel_candidate_check.sh (3 alternating rounds), then plain phase timelines (per-call
# time, main span, CTA median / max and the new CTA end percentiles) and per-tile events of both at
# DSpark T = 50, valid 133 (three runs) and 128. Packs $OUT/r.tgz and $OUT/r2.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
grep -q DSPARKCTL_WS_DH_TAIL_S_AHEAD kernels/sparse_mla_decode.cu || git apply bench/results/kernel_h200_s50_tail_s_seq/candidate.patch || exit 1  # (removed from the source after the session)
export PYTHONPATH=$PWD
R=/tmp/s50r1; rm -rf $R; mkdir -p $R
NAME=sa2 FLAGS=-DDSPARKCTL_WS_DH_TAIL_S_AHEAD=2 BASE=v74 ROUNDS=3 timeout 420 bash bench/kernel_candidate_check.sh
OUT2=$R/tl; mkdir -p $OUT2
OUT=$OUT2 SHAPES='64 192 133 0 50;64 192 128 0 50;64 192 133 0 50;64 192 133 0 50' timeout 150 \
  bash bench/kernel_timeline_ab.sh v74= sa2=-DDSPARKCTL_WS_DH_TAIL_S_AHEAD=2 \
  v74ev=-DDSPARKCTL_TL_EVENTS sa2ev=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_WS_DH_TAIL_S_AHEAD=2 > /dev/null 2>&1
grep -c C75 $OUT2/build_tl_*.log
# (the session ran an inline copy of this; --spans prints the same fields)
python3 bench/ws_timeline_summary.py --spans v74=$OUT2/timeline_v74.jsonl sa2=$OUT2/timeline_sa2.jsonl | tee $R/spans.txt
python3 bench/ws_timeline_summary.py --events v74ev=$OUT2/timeline_v74ev.jsonl sa2ev=$OUT2/timeline_sa2ev.jsonl | tee $R/events.txt
(cd $R && tar czf "$OUT/r2.tgz" .)
