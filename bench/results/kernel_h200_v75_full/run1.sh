#!/usr/bin/env bash
# Session 50, device call 3: v75's full run on its own source (the default build): GPU tests on the
# shipped and the SM120-register builds, memcheck / racecheck, the WS racecheck probe, the smoke at
# TP 4 and the bench table with the Triton peer (bench/kernel_device_run.sh), then a second table if
# the call has time. Carry .dev/s30 (the peer). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
F=/tmp/v75full; rm -rf $F; mkdir -p $F/run1 $F/reruns
t0=$(date +%s)
OUT=$F/run1 timeout 360 bash bench/kernel_device_run.sh .dev/s30/kernel_peer/flash_mla_sm120_triton.py > $F/run1/full_run.log 2>&1
echo "full run rc=$? $(( $(date +%s) - t0 )) s"
grep -E "passed|failed|ERROR SUMMARY|RACECHECK SUMMARY|verdict|spill" $F/run1/full_run.log | head -20
grep -E "dspark|decode \| 128 \| 128\(128\) \| 1024 \| 1 " $F/run1/kernel_bench.md | head -9
if [ $(( $(date +%s) - t0 )) -lt 420 ]; then
  SO=/tmp/kbuild/dsparkctl_sparse_mla_sm_90a.so
  DSPARKCTL_KERNEL_SO=$SO timeout 80 python3 bench/bench_kernel.py --triton-peer .dev/s30/kernel_peer/flash_mla_sm120_triton.py \
    --json "$F/reruns/kernel_bench_r2.json" --md "$F/reruns/kernel_bench_r2.md" > "$F/reruns/bench_r2.log" 2>&1 || tail -20 "$F/reruns/bench_r2.log"
  grep -E "dspark" "$F/reruns/kernel_bench_r2.md"
fi
(cd $F && tar czf "$OUT/r.tgz" .)
