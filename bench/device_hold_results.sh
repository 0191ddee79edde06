#!/usr/bin/env bash
# The device machine copies the working tree (tracked files included) up to 64 MiB with what a call
# carries. The tracked tree is ~43 MB, nearly all of it bench/results/ (the records of every device
# call), so a call that also carries the SGLang wheel cache (19 MB) no longer fits (session 47). No
# device step reads the older records: this moves them out of the working tree before such a call
# and puts them back after it.
#   usage: bash bench/device_hold_results.sh out [KEEP_DIR ...]   (KEEP_DIR: result dirs the call writes or reads)
#          bash bench/device_hold_results.sh back
# gpu_suite_h200/ (a CPU test reads it) and the top-level files of bench/results/ always stay.
set -euo pipefail
cd "$(dirname "$0")/.."
HOLD=${DSPARKCTL_RESULTS_HOLD:-/tmp/dsparkctl_results_hold}
case "${1:-}" in
  out)
    shift
    [ ! -e "$HOLD" ] || { echo "error: $HOLD exists (an earlier 'out' not put back?): run '$0 back' first" >&2; exit 2; }
    mkdir -p "$HOLD"
    for d in bench/results/*/; do
      n=$(basename "$d")
      keep=0
      for k in gpu_suite_h200 "$@"; do [ "$n" = "$(basename "$k")" ] && keep=1; done
      [ $keep = 1 ] || mv "$d" "$HOLD/"
    done
    echo "moved $(find "$HOLD" -mindepth 1 -maxdepth 1 | wc -l) result dirs to $HOLD; tracked tree now $(git ls-files -z | du -ch --files0-from=- --apparent-size 2>/dev/null | tail -1 | cut -f1) on disk"
    ;;
  back)
    [ -d "$HOLD" ] || { echo "error: nothing held at $HOLD" >&2; exit 2; }
    for d in "$HOLD"/*/; do
      n=$(basename "$d")
      [ ! -e "bench/results/$n" ] || { echo "error: bench/results/$n exists; not overwriting (held copy left in $HOLD)" >&2; exit 1; }
      mv "$d" bench/results/
    done
    rmdir "$HOLD"
    git status --short -- bench/results | grep '^ D' && { echo "error: tracked results still missing" >&2; exit 1; }
    echo "results back; git sees no missing file under bench/results"
    ;;
  *) echo "usage: $0 out [KEEP_DIR ...] | back" >&2; exit 2 ;;
esac
