#!/usr/bin/env bash
# Session 49, device call 6 (the session's last ~5 device minutes): a first look at the candidate
# -DDSPARKCTL_WS_DH_TAIL_S_AHEAD=1 (the tail's S run with the full tile's before it, in the halves
# kernel) against v74 (this tree without the flag: v74's SASS, 22 of 22 functions): the halves
# kernel's GPU tests on the candidate, then 2 alternating rounds of the --short table. No sanitizers,
# no smoke, no full test file: a full check is the next session's if this gains.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
A=/tmp/s49r6; rm -rf $A; mkdir -p $A
timeout 100 python3 bench/build_kernel.py sm_90a /tmp/kabn_v74 $A/build_v74.log > /dev/null &
timeout 100 python3 bench/build_kernel.py sm_90a /tmp/kabn_sa $A/build_sa.log -DDSPARKCTL_WS_DH_TAIL_S_AHEAD=1 > /dev/null &
wait
grep -c 'C75[0-9][0-9]' $A/build_sa.log
DSPARKCTL_KERNEL_SO=/tmp/kabn_sa/dsparkctl_sparse_mla_sm_90a.so timeout 40 python3 -m pytest -q -p no:cacheprovider \
  tests/test_kernel_gpu.py -k "short_tails or t50_halves or (large_ws_dims and T50)" 2>&1 | tail -2 | tee $A/tests_sa.txt
OUT=$A ROUNDS=2 PREBUILT=1 BENCH_SETS='--short' timeout 150 bash bench/kernel_abn.sh v74= sa=-DDSPARKCTL_WS_DH_TAIL_S_AHEAD=1 > $A/abn.log 2>&1
grep -E "^shape|dspark" $A/abn.log
(cd $A && tar czf "$OUT/r.tgz" .)
