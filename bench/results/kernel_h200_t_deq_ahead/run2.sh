#!/usr/bin/env bash
# Session 48, call 2: phase timelines of v74 and the DEQ_AHEAD candidate at LARGE32 shapes with
# chains of 1, 2 and 3 tiles (DSpark +512 T = 5 and 10 as planned; +512 T = 10 at 4 splits and
# DSpark T = 50 unsplit, both forced to LARGE32): do the CTAs get shorter, and where does the
# combine start. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
A=/tmp/tl2; rm -rf $A; mkdir -p $A
OUT=$A SHAPES='64 192 133 512 5;64 192 133 512 10;64 192 133 512 10 5 4;64 192 133 0 50 5 1;128 128 128 1024 1' \
  timeout 300 bash bench/kernel_timeline_ab.sh v74= tda=-DDSPARKCTL_T_DEQ_AHEAD=1 > $A/tl.log 2>&1
tail -60 $A/tl.log
(cd $A && tar czf "$OUT/r.tgz" .)
