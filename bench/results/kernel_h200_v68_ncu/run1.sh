#!/usr/bin/env bash
# Session 41, device call 4: Nsight Compute's per-instruction stall samples of v68 at DSpark T = 50
# (the halves kernel), to test the instruction-cache hypothesis for the WS prologue (session 41's
# prologue points: ~1,900 cycles from the tile range to Q's loads issued and ~2,500 to convert and
# store Q, a few hundred instructions each). bench/kernel_ncu.sh ds50 on the default build.
# ~2 minutes. Packs $OUT/ncu.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
K=/tmp/k68; rm -rf $K
timeout 150 python3 bench/build_kernel.py sm_90a $K /tmp/k68.log > /dev/null || { tail /tmp/k68.log; exit 1; }
N=/tmp/ncu68; rm -rf $N; mkdir -p $N
DSPARKCTL_KERNEL_SO=$K/dsparkctl_sparse_mla_sm_90a.so OUT=$N timeout 300 bash bench/kernel_ncu.sh ds50 | head -60
rm -f $N/prof.ncu-rep; (cd $N && tar czf "$OUT/ncu.tgz" .)
