#!/usr/bin/env bash
# Session 41, device call 3: where v68's WS prologue goes (~8,300 cycles to Q in shared memory at
# DSpark T = 50), and one candidate. (1) Timeline builds with -DDSPARKCTL_TL_EVENTS
# -DDSPARKCTL_TL_PROLOGUE (prologue points in tile 3's event slots; see DSPARKCTL_WS_PRO in the kernel
# source for the kinds) of v68 and of -DDSPARKCTL_WS_DH_Q_NOFENCE=1 at DSpark T = 50 (3 tiles a CTA).
# (2) bench/kernel_abn.sh v68 against the candidate: GPU tests on it, outputs against v68 (bit for bit
# expected: the same arithmetic), 4 alternating rounds of the --short rows. ~4 minutes. Packs
# $OUT/tl.tgz and $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
R=/tmp/tlp; rm -rf $R; mkdir -p $R
OUT=$R SHAPES='64 192 133 0 50' timeout 150 bash bench/kernel_timeline_ab.sh \
  v68pro=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_TL_PROLOGUE nfpro=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_TL_PROLOGUE,-DDSPARKCTL_WS_DH_Q_NOFENCE=1
python3 bench/ws_timeline_summary.py --events v68pro=$R/timeline_v68pro.jsonl nfpro=$R/timeline_nfpro.jsonl > $R/events.txt 2>&1
grep -E "tile 3|cta " $R/events.txt
(cd $R && tar czf "$OUT/tl.tgz" .)
A=/tmp/abn_nf; rm -rf $A; mkdir -p $A
BENCH_SETS='--short' OUT=$A ROUNDS=4 TESTS=1 COMPARE=1 timeout 330 bash bench/kernel_abn.sh v68= nf=-DDSPARKCTL_WS_DH_Q_NOFENCE=1 > $A/abn.log 2>&1
grep -E "gpu tests|compare|dspark" $A/abn.log | head -12
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
