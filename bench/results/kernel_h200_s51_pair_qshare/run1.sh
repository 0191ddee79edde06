#!/usr/bin/env bash
# Session 51, device call 3: the candidate -DDSPARKCTL_WS_PAIR_QSHARE=1 (v76's Q sharing for the one-CTA
# WS kernel's 2-split calls, a kernel of their own) against v76 (this tree without the flag), through
# bench/kernel_candidate_check.sh (4 alternating rounds: GPU tests, outputs against v76, memcheck,
# racecheck and the WS probe (1 and 2 splits), the smoke) and plain phase timelines of both at DSpark
# +512 T = 50 and 64 heads +1024 T = 64 (both 2-split WS calls). Packs $OUT/r.tgz. (Run at 715249e;
# the candidate left the source after the session: candidate.patch adds it back.)
set -uo pipefail
cd "$(dirname "$0")/../../.."
grep -q DSPARKCTL_WS_PAIR_QSHARE kernels/sparse_mla_decode.cu || git apply bench/results/kernel_h200_s51_pair_qshare/candidate.patch || exit 1
NAME=pq1 FLAGS=-DDSPARKCTL_WS_PAIR_QSHARE=1 BASE=v76 ROUNDS=4 \
  TL_SHAPES='64 192 133 512 50;64 128 128 1024 64' timeout 580 bash bench/kernel_candidate_check.sh
