#!/usr/bin/env bash
# Attribution of run1's two flags: v61 (the tree's default), each flag alone and both, 3 alternating
# bench rounds (bench/kernel_abn.sh; run1 already ran the GPU tests, the bit-for-bit compare, the
# sanitizers and the smoke on the pair). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
A=/tmp/abn2; rm -rf $A; mkdir -p $A
for v in "v61=" "split16=-DDSPARKCTL_DEQ_SPLIT16=1" "uns=-DDSPARKCTL_DEQ_UNSIGNED=1" "both=-DDSPARKCTL_DEQ_SPLIT16=1 -DDSPARKCTL_DEQ_UNSIGNED=1"; do
  n=${v%%=*}; f=${v#*=}
  # shellcheck disable=SC2086
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_$n $A/build_$n.log $f > /dev/null &
done
wait
OUT=$A ROUNDS=3 PREBUILT=1 timeout 420 bash bench/kernel_abn.sh v61= split16=-DDSPARKCTL_DEQ_SPLIT16=1 uns=-DDSPARKCTL_DEQ_UNSIGNED=1 \
  both=-DDSPARKCTL_DEQ_SPLIT16=1,-DDSPARKCTL_DEQ_UNSIGNED=1 > $A/abn.log 2>&1
tail -40 $A/abn.log
(cd $A && tar czf "$OUT/r.tgz" .)
