#!/usr/bin/env bash
# Session 49, device call 4: the candidate -DDSPARKCTL_WS_DH_TAIL_S16=1 (the halves kernel's <= 16-live
# tail tile's S by one m64n16k16 chain) against v74 (this tree without the flag: v74's SASS, 22 of
# 22 functions), through bench/kernel_candidate_check.sh (3 alternating rounds), then the halves
# kernel's short-tail GPU test on v74's build, then per-tile events of both at DSpark T = 50.
set -uo pipefail
cd "$(dirname "$0")/../../.."
R=/tmp/s49r4; rm -rf $R; mkdir -p $R
NAME=ts16 FLAGS=-DDSPARKCTL_WS_DH_TAIL_S16=1 BASE=v74 ROUNDS=3 timeout 400 bash bench/kernel_candidate_check.sh
PYTHONPATH=$PWD DSPARKCTL_KERNEL_SO=/tmp/kabn_v74/dsparkctl_sparse_mla_sm_90a.so timeout 60 python3 -m pytest -q -p no:cacheprovider \
  tests/test_kernel_gpu.py -k "short_tails or t50_halves" 2>&1 | tail -3 | tee $R/tests_v74.txt
OUT2=$R/tl; mkdir -p $OUT2
OUT=$OUT2 SHAPES='64 192 133 0 50' timeout 120 bash bench/kernel_timeline_ab.sh \
  v74ev=-DDSPARKCTL_TL_EVENTS ts16ev=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_WS_DH_TAIL_S16=1 > /dev/null 2>&1
python3 bench/ws_timeline_summary.py --events v74ev=$OUT2/timeline_v74ev.jsonl ts16ev=$OUT2/timeline_ts16ev.jsonl | tee $R/events.txt
(cd $R && tar czf "$OUT/r2.tgz" .)
