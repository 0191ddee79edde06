#!/usr/bin/env bash
# session 32, last device call: the shipped build's GPU tests after the session's last kernel source
# change (the timeline-only -DDSPARKCTL_TL_SPLIT_PV, store macro form), the shared checks of
# bench/kernel_checks.sh (memcheck, smoke) on that build, and the split-P.V timeline build at 128
# heads +1024 T = 64. Results packed into $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
A=$OUT/r; mkdir -p $A; export PYTHONPATH=$PWD
# shellcheck source=bench/kernel_checks.sh
. bench/kernel_checks.sh
export CHECK_TIMEOUT=60
timeout 120 python3 bench/build_kernel.py sm_90a /tmp/kfinal $A/build.log > /dev/null &
timeout 120 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_SPLIT_PV bench/kernel_timeline.cu -o /tmp/tl_split > $A/build_tl.log 2>&1 &
wait
SO=/tmp/kfinal/dsparkctl_sparse_mla_sm_90a.so
DSPARKCTL_KERNEL_SO=$SO timeout 90 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider > $A/gpu_tests.log 2>&1
echo "gpu tests: $(tail -1 $A/gpu_tests.log)"
kernel_smoke "$SO" $A/smoke_tp4.json
timeout 30 /tmp/tl_split 128 128 128 1024 64 > $A/timeline_split.jsonl 2>&1
python3 bench/ws_timeline_summary.py --tiles-split-pv final=$A/timeline_split.jsonl
(cd $OUT && tar czf r.tgz r)
