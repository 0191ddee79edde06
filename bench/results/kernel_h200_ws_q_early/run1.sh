#!/usr/bin/env bash
# Session 42, device call 2: -DDSPARKCTL_WS_Q_EARLY=1 (the WS kernels' consumers issue Q's loads right
# after griddepcontrol.wait, before the lengths; see the flag's comment in the kernel source), alone
# and with -DDSPARKCTL_WS_DH_SPLIT_ISSUE0=1 (call 1), against the shipped v68 and split-issue alone:
# bench/kernel_abn.sh (GPU tests on each candidate, outputs against v68 bit for bit, 5 alternating
# rounds of the --short rows), racecheck (rendezvous builds) over bench/racecheck_ws_probe.py for
# both new candidates, then the prologue points and tile events of v68, qe and s0qe at DSpark T = 50.
# ~8 minutes. Packs $OUT/r.tgz and $OUT/tl.tgz. (Run when =1 meant all three WS kernels; on v69's
# source, where 1 is the one-CTA kernels only, qe is -DDSPARKCTL_WS_Q_EARLY=2 and v68 is =0, and the
# split-issue builds need ../kernel_h200_ws_dh_split_issue0/candidate.patch: see README.md.)
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
. bench/kernel_checks.sh
export CHECK_TIMEOUT=100
A=/tmp/abn; rm -rf $A; mkdir -p $A
QE=-DDSPARKCTL_WS_Q_EARLY=1; S0=-DDSPARKCTL_WS_DH_SPLIT_ISSUE0=1
{
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_v68 $A/build_v68.log > /dev/null &
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_qe $A/build_qe.log $QE > /dev/null &
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_s0 $A/build_s0.log $S0 > /dev/null &
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_s0qe $A/build_s0qe.log $S0 $QE > /dev/null &
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_qerc $A/build_qerc.log $QE -DDSPARKCTL_WS_RACECHECK_SYNC > /dev/null &
  timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kabn_s0qerc $A/build_s0qerc.log $S0 $QE -DDSPARKCTL_WS_RACECHECK_SYNC > /dev/null &
  wait
}
OUT=$A ROUNDS=5 TESTS=1 TEST_TIMEOUT=120 COMPARE=1 PREBUILT=1 BENCH_SETS='--short' timeout 400 bash bench/kernel_abn.sh v68= qe=$QE s0=$S0 s0qe=$S0,$QE > $A/abn.log 2>&1
tail -30 $A/abn.log
kernel_ws_race_probe /tmp/kabn_qerc/dsparkctl_sparse_mla_sm_90a.so $A/racecheck_ws_qe.log
kernel_ws_race_probe /tmp/kabn_s0qerc/dsparkctl_sparse_mla_sm_90a.so $A/racecheck_ws_s0qe.log
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
R=/tmp/tl; rm -rf $R; mkdir -p $R
P=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_TL_PROLOGUE
OUT=$R SHAPES='64 192 133 0 50' timeout 100 bash bench/kernel_timeline_ab.sh v68=$P qe=$P,$QE s0qe=$P,$QE,$S0 > /dev/null 2>&1
python3 bench/ws_timeline_summary.py --prologue v68=$R/timeline_v68.jsonl qe=$R/timeline_qe.jsonl s0qe=$R/timeline_s0qe.jsonl
python3 bench/ws_timeline_summary.py --events v68=$R/timeline_v68.jsonl qe=$R/timeline_qe.jsonl s0qe=$R/timeline_s0qe.jsonl > $R/events.txt 2>&1
grep -E " tile 0 |cta " $R/events.txt
(cd $R && tar czf "$OUT/tl.tgz" .)
