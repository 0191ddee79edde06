#!/usr/bin/env bash
# Prepared in session 50 (not yet run): the candidate -DDSPARKCTL_WS_DH_QSHARE=1 (the halves kernel's
# two CTAs of a row block as a 2-CTA cluster sharing Q: each loads and converts 32 of the 64 rows and
# st.asyncs them to the peer) against v75 (this tree without the flag: v75's SASS, 22 of 22), through
# bench/kernel_candidate_check.sh (4 alternating rounds: GPU tests, outputs against v75, memcheck,
# racecheck, the WS probe, the smoke) and plain phase timelines of both at DSpark T = 50 (valid 133
# twice, 128 once; the spans and per-half medians). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
NAME=qs1 FLAGS=-DDSPARKCTL_WS_DH_QSHARE=1 BASE=v75 ROUNDS=4 \
  TL_SHAPES='64 192 133 0 50;64 192 128 0 50;64 192 133 0 50' timeout 580 bash bench/kernel_candidate_check.sh
