#!/usr/bin/env bash
# Phase timelines of build variants side by side (bench/kernel_timeline.cu): builds one timeline
# binary per NAME=FLAGS variant (in parallel), runs every shape of SHAPES on each into
# $OUT/timeline_NAME.jsonl, then bench/ws_timeline_summary.py --tiles over all of them into
# $OUT/tiles.txt (printed). The candidate device scripts' timeline step, written once.
#   usage: OUT=... SHAPES='H TOPK VALID EXTRA T [CONFIG SPLITS];...' bash bench/kernel_timeline_ab.sh NAME=FLAGS ...
#   e.g.   SHAPES='64 192 133 0 50' bash bench/kernel_timeline_ab.sh v67= wd=-DDSPARKCTL_WS_DIRECT=1
#   (FLAGS: comma-separated, may be empty; each run may take 40 s)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/timeline-out}; mkdir -p "$OUT"
[ $# -ge 1 ] && [ -n "${SHAPES:-}" ] || { echo "usage: SHAPES='...' bash bench/kernel_timeline_ab.sh NAME=FLAGS ..." >&2; exit 2; }
names=()
for v in "$@"; do
  name=${v%%=*}; flags=${v#*=}
  names+=("$name")
  # shellcheck disable=SC2086
  nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE ${flags//,/ } bench/kernel_timeline.cu -o "/tmp/tl_$name" > "$OUT/build_tl_$name.log" 2>&1 &
done
wait
pairs=()
for name in "${names[@]}"; do
  : > "$OUT/timeline_$name.jsonl"
  IFS=';' read -ra shapes <<< "$SHAPES"
  for args in "${shapes[@]}"; do
    # shellcheck disable=SC2086
    timeout 40 "/tmp/tl_$name" $args >> "$OUT/timeline_$name.jsonl" 2>> "$OUT/tl_err_$name.log"
  done
  pairs+=("$name=$OUT/timeline_$name.jsonl")
done
python3 bench/ws_timeline_summary.py --tiles "${pairs[@]}" > "$OUT/tiles.txt" 2>&1
cat "$OUT/tiles.txt"
