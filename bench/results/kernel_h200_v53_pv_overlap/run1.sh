#!/usr/bin/env bash
# session 31 (device): the WS kernel's warpgroup 0 issues the next tile's S behind its P.V instead of
# waiting for the P.V first (-DDSPARKCTL_WS_PV_OVERLAP=1). With v52's lo pass in flight ptxas
# serialized the wgmma for want of registers at 200 / 176 / 128, so the candidate runs at 216 / 176 /
# 112 (warpgroup 0 / warpgroup 1 / producer); r112 is that split alone. GPU tests on both, outputs
# against v52, 2 alternating rounds of both bench sets. Results packed into $OUT/r.tgz.
set -uo pipefail
A=/tmp/abn; rm -rf $A; mkdir -p $A
R=-DDSPARKCTL_WS_REGS_S=216,-DDSPARKCTL_WS_REGS_PRODUCER=112
OUT=$A ROUNDS=2 TESTS=1 COMPARE=1 PREBUILT=0 timeout 560 bash bench/kernel_abn.sh v52= r112=$R ov=-DDSPARKCTL_WS_PV_OVERLAP=1,$R \
  > $A/abn.log 2>&1
tail -45 $A/abn.log
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
