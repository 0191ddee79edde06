#!/usr/bin/env bash
# Prepared in session 39 for the next device call (not yet run): -DDSPARKCTL_WS_DIRECT=1 (the
# one-CTA WS kernel's warpgroups store their rows from registers: unsplit calls' bf16 rows with
# v67's quad transpose, split calls' fp32 partials as 8-byte pieces; the 2-split cluster combine
# keeps the staging; see the flag's comment in the kernel source) against the shipped v67:
# bench/kernel_candidate_check.sh (GPU tests, outputs against v67, which must be bit for bit;
# memcheck, racecheck, the WS probe, the smoke; 3 alternating rounds of the --short rows and of the
# 64- / 128-head rows, where 18 rows run the one-CTA WS kernel), then both builds' WS timelines at
# 128 heads +1024 T = 64 (unsplit) and 64 heads +1024 T = 32 (4 splits, partials), and v67's DSpark
# T = 50 (the halves kernel: 4 warps store 32 KB; the candidate's 8 warps store 64 KB).
# Expect: the WS rows' epilogue ("written - staged") shorter; every other row unchanged.
# ~5 minutes. Packs $OUT/r.tgz (candidate check) and $OUT/tl.tgz (timelines).
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=$OUT NAME=wd FLAGS="-DDSPARKCTL_WS_DIRECT=1" BASE=v67 ROUNDS=3 timeout 450 bash bench/kernel_candidate_check.sh
R=/tmp/tl; rm -rf $R; mkdir -p $R
OUT=$R SHAPES='128 128 128 1024 64;64 128 128 1024 32;64 192 133 0 50' timeout 200 \
  bash bench/kernel_timeline_ab.sh v67= wd=-DDSPARKCTL_WS_DIRECT=1
(cd $R && tar czf "$OUT/tl.tgz" .)
