#!/usr/bin/env bash
# For the next device session (prepared in session 35, not yet run): where v63's instructions and
# stalls now go, before the next integer-work candidate. Nsight Compute on LARGE16's DSpark rows
# (ds25, ds10), the WS kernel's DSpark T = 50 (ds50) and T = 1 at 128 heads +1024 (t1h128), then the
# phase timelines of the same rows (bench/kernel_timeline.sh). ~3 minutes. Packs $OUT/r.tgz; compare
# summary.txt with ../kernel_h200_v60_ncu/summary.txt (v60: issue slots 26% busy at ds25; IMAD 15.9%,
# ISETP 9.0%, SEL 8.8% of executed instructions).
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
N=/tmp/v63ncu; rm -rf $N; mkdir -p $N/ncu $N/tl
timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kb63 $N/build.log > /dev/null || { echo BUILD FAILED; exit 1; }
DSPARKCTL_KERNEL_SO=/tmp/kb63/dsparkctl_sparse_mla_sm_90a.so OUT=$N/ncu timeout 300 bash bench/kernel_ncu.sh ds25 ds10 ds50 t1h128 > $N/ncu.log 2>&1
echo "ncu rc=$?"; tail -30 $N/ncu/summary.txt 2> /dev/null
OUT=$N/tl timeout 200 bash bench/kernel_timeline.sh > $N/timeline.log 2>&1; echo "timeline rc=$?"
rm -f $N/ncu/*.ncu-rep; (cd $N && tar czf "$OUT/r.tgz" .)
