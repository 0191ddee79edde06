#!/usr/bin/env bash
# Session 40, device call 2: -DDSPARKCTL_WS_DH_RING3=1 (the halves kernel with Q in warpgroup 0's
# registers and a third KV buffer in Q's 64 KB; see the flag's comment in the kernel source) against
# the shipped v67: bench/kernel_candidate_check.sh (GPU tests, which run every case on the halves
# kernel too (config 7), outputs against v67, which must be bit for bit; memcheck, racecheck, the WS
# probe, the smoke; 4 alternating rounds of the --short rows: DSpark T = 50 is the row that runs the
# halves kernel), then both builds' WS timelines at DSpark T = 50 (valid 133) and the halves forced
# on 64 heads +1024 T = 8 (a longer chain). Expect: T = 50's warpgroup 1 tile waits down, the
# call shorter; every other row unchanged. ~5 minutes. Packs $OUT/r.tgz and $OUT/tl.tgz.
# (NAME names the candidate build: r3 here, r3b in run2.sh, which calls this on its tree.)
set -uo pipefail
cd "$(dirname "$0")/../../.."
NAME=${NAME:-r3}
BENCH_SETS='--short' OUT=$OUT NAME=$NAME FLAGS="-DDSPARKCTL_WS_DH_RING3=1" BASE=v67 ROUNDS=4 timeout 450 bash bench/kernel_candidate_check.sh
R=/tmp/tl; rm -rf $R; mkdir -p $R
OUT=$R SHAPES='64 192 133 0 50;64 128 128 1024 8 7 1' timeout 150 bash bench/kernel_timeline_ab.sh v67= "$NAME=-DDSPARKCTL_WS_DH_RING3=1"
(cd $R && tar czf "$OUT/tl.tgz" .)
