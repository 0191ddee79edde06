#!/usr/bin/env bash
# Session 50, device call 4: the candidate -DDSPARKCTL_WS_DH_HALF_BODIES=1 (the halves kernel as two
# bodies behind one branch on blockIdx.z, each with its half of O's dims a constant: 8,704 -> 13,664
# SASS instructions, each CTA running one body) against v75 (this tree without the flag: v75's SASS,
# 22 of 22), through bench/kernel_candidate_check.sh (3 alternating rounds) and its plain phase
# timelines of both at DSpark T = 50 (valid 133 twice, 128 once). (As run, the timelines were a
# second step of this script, packed into r2.tgz; the candidate check's TL_SHAPES now runs the same.)
set -uo pipefail
cd "$(dirname "$0")/../../.."
grep -q DSPARKCTL_WS_DH_HALF_BODIES kernels/sparse_mla_decode.cu || git apply bench/results/kernel_h200_s50_dh_half_bodies/candidate.patch || exit 1  # (removed from the source after the session)
NAME=hb1 FLAGS=-DDSPARKCTL_WS_DH_HALF_BODIES=1 BASE=v75 ROUNDS=3 \
  TL_SHAPES='64 192 133 0 50;64 192 128 0 50;64 192 133 0 50' timeout 570 bash bench/kernel_candidate_check.sh
