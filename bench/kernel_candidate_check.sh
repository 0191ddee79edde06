#!/usr/bin/env bash
# One device call for a warp-specialized-kernel candidate that is off by default (session 32): the
# shipped build against NAME (FLAGS), GPU tests and outputs against the shipped build
# (bench/kernel_abn.sh, ROUNDS alternating rounds), then, for the candidate, the full run's checks
# that bear on a WS-only change: memcheck on the sanitizer subset, racecheck on its
# -DDSPARKCTL_WS_RACECHECK_SYNC build (subset T2 and bench/racecheck_ws_probe.py), and the
# product's smoke at TP 4. Results packed into $OUT/r.tgz.
#   usage: NAME=mke FLAGS=-DDSPARKCTL_WS_MASK_EARLY=1 [BASE=v53] [ROUNDS=3] bash bench/kernel_candidate_check.sh
#   [TL_SHAPES='64 192 133 0 50;...']: then plain phase timelines of both builds at those shapes
#   (FLAGS: space-separated)
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -z "${NAME:-}" ] || [ -z "${FLAGS:-}" ] || [ -z "${OUT:-}" ]; then
  echo "usage: OUT=... NAME=... FLAGS='-D...' [BASE=v53] [ROUNDS=3] bash bench/kernel_candidate_check.sh" >&2
  exit 2
fi
BASE=${BASE:-v53}; ROUNDS=${ROUNDS:-3}
A=/tmp/abn; rm -rf $A; mkdir -p $A; export PYTHONPATH=$PWD
# shellcheck source=bench/kernel_checks.sh
. bench/kernel_checks.sh
export CHECK_TIMEOUT=150
# shellcheck disable=SC2086
{
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_$BASE $A/build_$BASE.log > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_$NAME $A/build_$NAME.log $FLAGS > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_${NAME}rc $A/build_${NAME}rc.log $FLAGS -DDSPARKCTL_WS_RACECHECK_SYNC > /dev/null &
  wait
}
OUT=$A ROUNDS=$ROUNDS TESTS=1 COMPARE=1 PREBUILT=1 timeout 330 bash bench/kernel_abn.sh "$BASE=" "$NAME=${FLAGS// /,}" > $A/abn.log 2>&1
tail -45 $A/abn.log
SO=/tmp/kabn_$NAME/dsparkctl_sparse_mla_sm_90a.so; RC=/tmp/kabn_${NAME}rc/dsparkctl_sparse_mla_sm_90a.so
kernel_sanitizers "$SO" "$RC" 6 > $A/sanitizer.log 2>&1
kernel_ws_race_probe "$RC" $A/racecheck_ws.log >> $A/sanitizer.log
cat $A/sanitizer.log
kernel_smoke "$SO" $A/smoke_$NAME.json
if [ -n "${TL_SHAPES:-}" ]; then
  # TL_SHAPES='H TOPK VALID EXTRA T;...' (session 50): plain phase timelines of both builds at those
  # shapes, each build's C75xx count, and the spans (a call ends with its last CTA: the CTA end
  # percentiles, the halves kernel's per-half medians)
  mkdir -p $A/tl
  OUT=$A/tl SHAPES="$TL_SHAPES" timeout 150 bash bench/kernel_timeline_ab.sh "$BASE=" "$NAME=${FLAGS// /,}" > /dev/null 2>&1
  grep -c C75 $A/tl/build_tl_*.log
  python3 bench/ws_timeline_summary.py --spans "$BASE=$A/tl/timeline_$BASE.jsonl" "$NAME=$A/tl/timeline_$NAME.jsonl" | tee $A/spans.txt
fi
rm -f $A/*.pt; (cd $A && tar czf "$OUT/r.tgz" .)
