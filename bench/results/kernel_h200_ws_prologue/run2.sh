#!/usr/bin/env bash
# Session 41, device call 5: -DDSPARKCTL_WS_Q_LEAN=1 (the WS kernels' Q conversion in the usual case as
# a branch-free loop without the scale; see the flag's comment in the kernel source). (1) Prologue
# points (-DDSPARKCTL_TL_EVENTS -DDSPARKCTL_TL_PROLOGUE) of v68 and the candidate at DSpark T = 50.
# (2) bench/kernel_abn.sh v68 against it: GPU tests on it, outputs against v68 (bit for bit expected),
# 4 alternating rounds of the --short rows (every WS row runs the changed prologue). ~4 minutes.
# Packs $OUT/tl.tgz and $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
NAME=${NAME:-ql}; FL=${FL:--DDSPARKCTL_WS_Q_LEAN=1}
R=/tmp/tlp; rm -rf $R; mkdir -p $R
OUT=$R SHAPES='64 192 133 0 50' timeout 150 bash bench/kernel_timeline_ab.sh \
  v68pro=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_TL_PROLOGUE "${NAME}pro=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_TL_PROLOGUE,${FL// /,}"
python3 bench/ws_timeline_summary.py --events v68pro=$R/timeline_v68pro.jsonl "${NAME}pro=$R/timeline_${NAME}pro.jsonl" > $R/events.txt 2>&1
python3 - "$R" "$NAME" <<'PY'
import json, sys
names = ["Q loads issued", "Q landed", "Q stored", "fence", "consumer bar", "wg0 setmaxnreg", "prod setmaxnreg",
         "tile0 copies issued", "tile1 copies issued", "past griddep wait"]
kinds = ["wg0.ready", "wg0.S", "wg0.mask", "wg0.Pfree", "wg0.P", "wg1.ready", "wg1.PV", "wg1.copies", "prod.landed", "prod.published"]
for f in ("v68pro", sys.argv[2] + "pro"):
    for line in open(f"{sys.argv[1]}/timeline_{f}.jsonl"):
        d = json.loads(line); ev = d["tile_events"]
        print(f, "us", d["stream_us_per_call"], " ".join(f"{n}={v}" for v, n in sorted((ev[k][3], names[i]) for i, k in enumerate(kinds))),
              "written", ev["written_at"])
PY
(cd $R && tar czf "$OUT/tl.tgz" .)
A=/tmp/abn_q; rm -rf $A; mkdir -p $A
BENCH_SETS='--short' OUT=$A ROUNDS=4 TESTS=1 COMPARE=1 timeout 330 bash bench/kernel_abn.sh v68= "$NAME=${FL// /,}" > $A/abn.log 2>&1
grep -E "gpu tests|compare|\|" $A/abn.log | head -30
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
