#!/usr/bin/env bash
# Prepared in session 40 for the next device call (not yet run): which chain binds DSpark T = 50 on
# v68's halves kernel. Timeline builds with -DDSPARKCTL_TL_EVENTS (each WS role's per-tile points
# since the kernel's entry: bench/kernel_timeline.cu's "tile_events", the median CTA) of v68 and of
# v67 (-DDSPARKCTL_WS_DH_RING3=0), at DSpark T = 50 (valid 133) and the halves forced on 64 heads
# +1024 T = 8 (18 tiles a CTA), then bench/ws_timeline_summary.py --events. Read per tile: the
# producer's publish against warpgroup 0's ready (tiles late?), warpgroup 0's P hand-off against
# warpgroup 1's previous P.V end (P waiting for the one P buffer?), warpgroup 1's P.V end against
# the next P hand-off. ~1.5 minutes. Packs $OUT/tl.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
R=/tmp/tlev; rm -rf $R; mkdir -p $R
OUT=$R SHAPES='64 192 133 0 50;64 128 128 1024 8 7 1' timeout 200 bash bench/kernel_timeline_ab.sh \
  v68ev=-DDSPARKCTL_TL_EVENTS v67ev=-DDSPARKCTL_TL_EVENTS,-DDSPARKCTL_WS_DH_RING3=0
python3 bench/ws_timeline_summary.py --events v68ev=$R/timeline_v68ev.jsonl v67ev=$R/timeline_v67ev.jsonl | tee $R/events.txt
(cd $R && tar czf "$OUT/tl.tgz" .)
