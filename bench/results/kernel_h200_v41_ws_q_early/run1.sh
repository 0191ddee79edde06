#!/usr/bin/env bash
# session 23 run 8 (device, last minutes): candidate -DDSPARKCTL_WS_Q_EARLY: the WS consumers' Q loads
# issued right after griddepcontrol.wait, before the split's tile range (run 7: range known ~2,000
# cycles after entry, Q in registers ~2,500-3,000 later). GPU tests + same-call A/B, one round,
# the short rows and the 64 / 128-head rows.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=$R/abn TESTS=1 ROUNDS=1 timeout 230 bash bench/kernel_abn.sh base= qearly=-DDSPARKCTL_WS_Q_EARLY 2>&1 | tee $R/abn.txt | grep -vE "^(dspark|decode) H=(16|32)"
rm -rf /tmp/kabn_*; cd $R && tar czf $OUT/r.tgz .
