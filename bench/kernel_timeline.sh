#!/usr/bin/env bash
# Phase timelines (bench/kernel_timeline.cu) for the bench's latency-bound and throughput
# shapes, one JSON line per shape, into $OUT/timeline.jsonl (default ./timeline-out).
#   usage: [NVCC_EXTRA=-D...] bash bench/kernel_timeline.sh [ARCH]   (ARCH default sm_90a)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/timeline-out}; mkdir -p "$OUT"
ARCH=${1:-sm_90a}
BIN=/tmp/dsparkctl_timeline
# shellcheck disable=SC2086
nvcc -O3 -std=c++17 -arch="$ARCH" -DDSPARKCTL_TIMELINE ${NVCC_EXTRA:-} bench/kernel_timeline.cu -o "$BIN"
: > "$OUT/timeline.jsonl"
# H TOPK VALID EXTRA T [CONFIG SPLITS]
while read -r args; do
  [ -z "$args" ] && continue
  # shellcheck disable=SC2086
  "$BIN" $args | tee -a "$OUT/timeline.jsonl"
done <<'SHAPES'
16 128 128 512 1
64 128 128 512 1
64 128 128 1024 1
128 128 128 512 1
128 128 128 1024 1
64 192 133 0 5
64 192 133 0 10
64 192 133 0 25
64 192 133 0 50
64 192 133 0 50 1
64 192 133 512 5
64 192 133 512 10
64 192 133 512 10 1 6
64 192 133 512 25
64 192 133 512 50
64 128 128 1024 64
128 128 128 1024 64
16 128 128 1024 64
16 128 128 512 8
SHAPES
