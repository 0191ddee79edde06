#!/usr/bin/env bash
# Full Nsight Compute profile of the kernel at a few bench shapes, boost clocks and warm caches (no clock
# locking), for finding where a call's time goes. Writes to $OUT (default ./ncu-out):
#   details.csv.gz  every section of every profiled launch (main kernel and combine)
#   source.csv.gz   per-SASS-instruction stall samples of every profiled launch
#   raw.csv.gz      every raw metric of every profiled launch (stall reasons per issue)
#   summary.txt     the headline metrics per launch and the top stalled instructions
#   usage: DSPARKCTL_KERNEL_SO=... bash bench/kernel_ncu.sh [SHAPE ...]   (shapes: bench/kernel_profile.py)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/ncu-out}; mkdir -p "$OUT"
SHAPES=${*:-t1 t1h128 ds50}
ncu --set full --import-source no --clock-control none --cache-control none -k regex:sparse_mla -f -o "$OUT/prof" \
  python3 bench/kernel_profile.py ncu $SHAPES > "$OUT/ncu.log" 2>&1 || { tail -20 "$OUT/ncu.log"; exit 1; }
ncu -i "$OUT/prof.ncu-rep" --page details --csv | gzip > "$OUT/details.csv.gz"
ncu -i "$OUT/prof.ncu-rep" --page raw --csv | gzip > "$OUT/raw.csv.gz"
ncu -i "$OUT/prof.ncu-rep" --page source --csv --print-source sass | gzip > "$OUT/source.csv.gz"
[ -f bench/ncu_summary.py ] && python3 bench/ncu_summary.py "$OUT" | tee "$OUT/summary.txt"
exit 0
