#!/usr/bin/env bash
# Session 47, call 3: the candidate benched first (slot-order check), 7 alternating rounds of the
# DSpark and T = 1 rows (--short) and the 32-head decode rows, then phase timelines of both builds at
# the LARGE32 shapes (T = 1 at 128 heads +1024, DSpark +512 T = 5 / 10). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
A=/tmp/abn2; rm -rf $A; mkdir -p $A
OUT=$A ROUNDS=7 BENCH_SETS='--short;--no-ref --heads 32' timeout 420 bash bench/kernel_abn.sh \
  tes=-DDSPARKCTL_T_EARLY_STORE=1 v73= > $A/abn.log 2>&1
tail -30 $A/abn.log
OUT=$A/tl SHAPES='128 128 128 1024 1;64 192 133 512 10;64 192 133 512 5' timeout 150 bash bench/kernel_timeline_ab.sh \
  v73= tes=-DDSPARKCTL_T_EARLY_STORE=1 > $A/tl.log 2>&1
tail -40 $A/tl.log
(cd $A && tar czf "$OUT/r.tgz" .)
