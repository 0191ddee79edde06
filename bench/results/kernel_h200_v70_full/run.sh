#!/usr/bin/env bash
# v70's device call (session 44, call 3): the full run of the shipped source (bench/kernel_device_run.sh
# with the Triton peer: GPU tests on the shipped and the SM120-register builds, sanitizers, the WS
# probe, the smoke, the bench table), then the same-call A/B that re-checks call 2's gain: v69
# (-DDSPARKCTL_FINISH_ROWS_LOOP=0) against v70 (the default), outputs bit for bit, 6 alternating
# rounds of the --short rows, then the bench table once more on the shipped build. Carry .dev/s30
# (the peer). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
F=/tmp/full; rm -rf $F; mkdir -p $F/run1 $F/ab $F/reruns
t0=$(date +%s)
OUT=$F/run1 timeout 330 bash bench/kernel_device_run.sh .dev/s30/kernel_peer/flash_mla_sm120_triton.py > $F/run1/full_run.log 2>&1
echo "full run rc=$? $(( $(date +%s) - t0 )) s"
grep -E "passed|ERROR SUMMARY|RACECHECK SUMMARY|verdict|spill" $F/run1/full_run.log | head -20
grep -E "dspark|decode \| 128 \| 128\(128\) \| 1024 \| 1 " $F/run1/kernel_bench.md | head -9
{
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v69 $F/ab/build_v69.log -DDSPARKCTL_FINISH_ROWS_LOOP=0 > /dev/null &
  timeout 150 python3 bench/build_kernel.py sm_90a /tmp/kabn_v70 $F/ab/build_v70.log > /dev/null &
  wait
}
OUT=$F/ab ROUNDS=6 COMPARE=1 PREBUILT=1 BENCH_SETS='--short' timeout 240 bash bench/kernel_abn.sh v69=-DDSPARKCTL_FINISH_ROWS_LOOP=0 v70= > $F/ab/abn.log 2>&1
tail -26 $F/ab/abn.log
DSPARKCTL_KERNEL_SO=/tmp/kabn_v70/dsparkctl_sparse_mla_sm_90a.so timeout 100 python3 bench/bench_kernel.py --triton-peer .dev/s30/kernel_peer/flash_mla_sm120_triton.py \
  --json "$F/reruns/kernel_bench_r2.json" --md "$F/reruns/kernel_bench_r2.md" > "$F/reruns/bench_r2.log" 2>&1 || tail -20 "$F/reruns/bench_r2.log"
grep -E "dspark" "$F/reruns/kernel_bench_r2.md"
rm -f $F/ab/*.pt; (cd $F && tar czf "$OUT/r.tgz" .)
echo "total $(( $(date +%s) - t0 )) s"
