#!/usr/bin/env bash
# Session 35's prepared candidates (off by default; not yet run on a GPU), for the next device
# session: -DDSPARKCTL_DEQ_SW_HALVES=1 (the swizzled 16-byte tiles' odd-piece-first loads: LARGE32
# <2, 64, 16> -24 SASS instructions, LARGE <4, 64, 16> -40, 56 SEL each) and -DDSPARKCTL_WS_LO_SPLIT16=1
# (warpgroup 1's lo-part conversion without shifts: -8) against v63 in one call
# (bench/kernel_candidate_check.sh: GPU tests, outputs bit for bit against v63, 3 alternating bench
# rounds, memcheck, racecheck, the smoke). Rows to watch: DSpark +512 T = 5 / 10 and T = 1 at 128
# heads +1024 (LARGE32), the WS rows. Then the DSpark plan sweep on the candidate: on v62 (before v63's
# loader cuts) DSpark T = 50 ran 17.61 us on the WS kernel against 18.57 on LARGE32 (100 CTAs of 3
# tiles), and v63 / this candidate cut mostly LARGE32's instructions, so the plan may move.
# ~5 minutes. Packs $OUT/r.tgz (the sweep as sweep.tgz beside it).
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=$OUT NAME=c64 FLAGS="-DDSPARKCTL_DEQ_SW_HALVES=1 -DDSPARKCTL_WS_LO_SPLIT16=1" BASE=v63 ROUNDS=3 timeout 450 bash bench/kernel_candidate_check.sh
S=/tmp/sweep64; rm -rf $S; mkdir -p $S
for b in v63 c64; do
  PYTHONPATH=$PWD DSPARKCTL_KERNEL_SO=/tmp/kabn_$b/dsparkctl_sparse_mla_sm_90a.so timeout 60 python3 bench/plan_sweep.py --kind dspark \
    --json $S/sweep_dspark_$b.json --md $S/sweep_dspark_$b.md > $S/sweep_$b.log 2>&1; echo "sweep $b rc=$?"
done
tail -12 $S/sweep_dspark_c64.md
(cd $S && tar czf "$OUT/sweep.tgz" .)
