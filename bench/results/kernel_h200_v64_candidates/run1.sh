#!/usr/bin/env bash
# Session 35's prepared candidates (off by default; not yet run on a GPU), for the next device
# session: -DDSPARKCTL_DEQ_SW_HALVES=1 (the swizzled 16-byte tiles' odd-piece-first loads: LARGE32
# <2, 64, 16> -24 SASS instructions, LARGE <4, 64, 16> -40, 56 SEL each) and -DDSPARKCTL_WS_LO_SPLIT16=1
# (warpgroup 1's lo-part conversion without shifts: -8) against v63 in one call
# (bench/kernel_candidate_check.sh: GPU tests, outputs bit for bit against v63, 3 alternating bench
# rounds, memcheck, racecheck, the smoke). Rows to watch: DSpark +512 T = 5 / 10 and T = 1 at 128
# heads +1024 (LARGE32), the WS rows. ~4 minutes. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=$OUT NAME=c64 FLAGS="-DDSPARKCTL_DEQ_SW_HALVES=1 -DDSPARKCTL_WS_LO_SPLIT16=1" BASE=v63 ROUNDS=3 timeout 570 bash bench/kernel_candidate_check.sh
