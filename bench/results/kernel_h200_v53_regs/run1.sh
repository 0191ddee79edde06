#!/usr/bin/env bash
# session 31 (device): v53's full run (the WS register split 216 / 176 / 112) with v52 in the same
# call, then the product's GPU suite on it.
#   bash bench/results/kernel_h200_v53_regs/run1.sh   (carry .dev/s33/v52 .dev/s30/kernel_peer .dev/wheelcache)
# .dev/s33/v52 = git archive bb2a0bd dsparkctl kernels patches pyproject.toml (v52 as shipped).
set -uo pipefail
mkdir -p /tmp/o1 /tmp/o2
OLD_NAME=v52 NEW_NAME=v53 ROUNDS=2 OUT=/tmp/o1 timeout 330 bash bench/kernel_full_ab.sh .dev/s33/v52 2>&1 | tail -40
cp /tmp/o1/r.tgz "$OUT/full_ab.tgz"
OUT=/tmp/o2 timeout 240 bash bench/gpu_suite.sh > /tmp/o2/gpu_suite.out 2>&1
echo "gpu_suite rc $?"; tail -25 /tmp/o2/gpu_suite.out
(cd /tmp/o2 && tar czf "$OUT/suite.tgz" .)
