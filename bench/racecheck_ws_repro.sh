#!/usr/bin/env bash
# Build bench/racecheck_ws_repro.cu in its variants (all features, then each one removed) and
# run each plainly (it checks its own output) and under compute-sanitizer racecheck RUNS times.
# One line per run: variant, mismatches, racecheck hazards. Needs an sm_90 GPU.
#   usage: OUT=dir RUNS=3 bash bench/racecheck_ws_repro.sh [CTAS] [TILES]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/racecheck_repro_out}
RUNS=${RUNS:-3}
CTAS=${1:-8}
TILES=${2:-5}
mkdir -p "$OUT/bin"
# all: the shipped kernel's features; *_sync / *_mbar: the same with the P hand-off as a named-
# barrier rendezvous / mbarriers instead of bar.arrive; bare_*: no bulk copies, wgmma or setmaxnreg;
# q_lds_sync: warpgroup 0 also reads Q by ld.shared (RC_Q_LDS, session 42), every hand-off a rendezvous;
# pw1_*: that plus a producer / warpgroup 1 named barrier as a rendezvous (RC_PW1=2), the P hand-offs
# as named-barrier rendezvous (pw1_sync: the split-issue candidate's racecheck build) or mbarriers.
declare -A VARIANTS=(
  [all]=""
  [all_sync]="-DRC_HANDOFF=1"
  [all_mbar]="-DRC_HANDOFF=2"
  [no_bulk]="-DRC_BULK=0"
  [no_wgmma]="-DRC_WGMMA=0"
  [no_maxnreg]="-DRC_MAXNREG=0"
  [epi_named]="-DRC_EPI_NAMED=1"
  [bare_arrive]="-DRC_BULK=0 -DRC_WGMMA=0 -DRC_MAXNREG=0"
  [bare_sync]="-DRC_BULK=0 -DRC_WGMMA=0 -DRC_MAXNREG=0 -DRC_HANDOFF=1"
  [q_lds_sync]="-DRC_HANDOFF=1 -DRC_Q_LDS=1"
  [pw1_sync]="-DRC_HANDOFF=1 -DRC_Q_LDS=1 -DRC_PW1=2"
  [pw1_mbar]="-DRC_HANDOFF=2 -DRC_Q_LDS=1 -DRC_PW1=2"
)
for v in "${!VARIANTS[@]}"; do
  # shellcheck disable=SC2086
  nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -lineinfo ${VARIANTS[$v]} bench/racecheck_ws_repro.cu \
    -o "$OUT/bin/$v" > "$OUT/bin/$v.build.log" 2>&1 &
done
wait
for v in ${VARIANTS_RUN:-all all_sync all_mbar no_bulk no_wgmma no_maxnreg epi_named bare_arrive bare_sync q_lds_sync pw1_sync pw1_mbar}; do
  [ -x "$OUT/bin/$v" ] || { echo "$v BUILD FAILED"; tail -5 "$OUT/bin/$v.build.log"; continue; }
  plain=$(timeout 60 "$OUT/bin/$v" "$CTAS" "$TILES" | grep RESULT)
  for i in $(seq 1 "$RUNS"); do
    log="$OUT/$v.rc$i.log"
    timeout 120 compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 20 "$OUT/bin/$v" "$CTAS" "$TILES" > "$log" 2>&1
    echo "$v run $i | ${plain#RESULT } | $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$log" | tr '\n' ' ')"
  done
done
