#!/usr/bin/env bash
# session 32 call 1 (run as .dev/s32/tl1.sh, recorded here): v53 phase timelines (default and the single-pass v51 form), same call
set -uo pipefail
cd "$(dirname "$0")/../../.."
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
( nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl_v53 > $R/build_v53.log 2>&1 ) &
( nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_NOPE_P_HILO=0 -DDSPARKCTL_WS_NOPE_P_HILO=0 -DDSPARKCTL_WS_REGS_S=216 -DDSPARKCTL_WS_REGS_PV=160 -DDSPARKCTL_WS_REGS_PRODUCER=128 bench/kernel_timeline.cu -o /tmp/tl_single > $R/build_single.log 2>&1 ) &
wait
for v in v53 single; do
  : > $R/timeline_$v.jsonl
  while read -r args; do
    [ -z "$args" ] && continue
    timeout 60 /tmp/tl_$v $args >> $R/timeline_$v.jsonl 2>>$R/err_$v.log
  done <<'SHAPES'
64 128 128 1024 1
128 128 128 1024 1
64 192 133 0 10
64 192 133 0 25
64 192 133 0 50
64 192 133 512 10
64 192 133 512 25
64 192 133 512 50
64 128 128 1024 64
128 128 128 1024 64
SHAPES
done
python3 bench/ws_timeline_summary.py v53=$R/timeline_v53.jsonl single=$R/timeline_single.jsonl > $R/summary.txt 2>&1
cat $R/summary.txt
tar czf $OUT/r.tgz -C $OUT r
