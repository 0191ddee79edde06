#!/usr/bin/env bash
# Session 43, device call 6 (~3.5 minutes, the session's last device time): -DDSPARKCTL_WS_DH_CONV0_FIRST=1
# with -DDSPARKCTL_WS_DH_Q_LEAN=1 (session 41's branch-free Q conversion, halves kernel only) against v69:
# bench/kernel_abn.sh, outputs against v69 (bit for bit expected), 3 alternating rounds of the --short
# rows; no GPU tests or sanitizers (a speed question: both flags were checked separately, CONV0_FIRST in
# call 5 and Q_LEAN in session 41). Files in $OUT/abn.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
{
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v69 /tmp/build_v69.log > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_cfql /tmp/build_cfql.log -DDSPARKCTL_WS_DH_CONV0_FIRST=1 -DDSPARKCTL_WS_DH_Q_LEAN=1 > /dev/null &
  wait
}
BENCH_SETS='--short' OUT=$OUT/abn ROUNDS=3 COMPARE=1 PREBUILT=1 timeout 150 bash bench/kernel_abn.sh v69= cfql=-DDSPARKCTL_WS_DH_CONV0_FIRST=1,-DDSPARKCTL_WS_DH_Q_LEAN=1 > $OUT/abn.log 2>&1
grep -E "compare|T=50|T=25 " $OUT/abn.log
rm -f $OUT/abn/*.pt
