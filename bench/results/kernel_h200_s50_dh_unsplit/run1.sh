#!/usr/bin/env bash
# Session 50, device call 2: the candidate -DDSPARKCTL_WS_DH_UNSPLIT=1 (the halves kernel, which the
# plan launches only unsplit, with its split paths compiled out: 10,408 -> 8,704 SASS instructions,
# same registers, no spills) against v74 (this tree without the flag: v74's SASS, 22 of 22), through
# bench/kernel_candidate_check.sh (4 alternating rounds) and its plain phase timelines of both at
# DSpark T = 50 (valid 133 three times, 128 once). (As run, the timelines were a second step of this
# script, packed into r2.tgz; the candidate check's TL_SHAPES now runs the same steps.)
set -uo pipefail
cd "$(dirname "$0")/../../.."
# (v75 turned the flag on by default: the A/B needs a tree where it is off, d59de32)
grep -q "define DSPARKCTL_WS_DH_UNSPLIT 0" kernels/sparse_mla_decode.cu || { echo "run this on tree d59de32 (v74 + the flag, off)" >&2; exit 2; }
NAME=us1 FLAGS=-DDSPARKCTL_WS_DH_UNSPLIT=1 BASE=v74 ROUNDS=4 \
  TL_SHAPES='64 192 133 0 50;64 192 128 0 50;64 192 133 0 50;64 192 133 0 50' timeout 570 bash bench/kernel_candidate_check.sh
