#!/usr/bin/env bash
# Session 24, device call 4: v41 = the WS producer's conversion with per-thread store addresses (the
# default now; -DDSPARKCTL_WS_CONV_LEGACY builds v40's loop, SASS-identical to v40 per function).
# Part 1: same-call A/B (v40 first, so the GPU tests and the bit-for-bit comparison run on v41), 2 rounds.
# Part 2: the full device run on the default (v41) build: GPU tests, memcheck, racecheck on the WS
# rendezvous build, SM120-register build + tests + memcheck, full bench with the Triton peer and the
# foreign predecessor.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=$R/abn TESTS=1 COMPARE=1 TEST_TIMEOUT=150 ROUNDS=2 timeout 240 bash bench/kernel_abn.sh v40=-DDSPARKCTL_WS_CONV_LEGACY v41= 2>&1 | tee $R/abn.txt | grep -vE "^decode H=(16|32)"
rm -rf /tmp/kabn_* $R/abn/*.pt
OUT=$R/full timeout 320 bash bench/kernel_device_run.sh .dev/s30/kernel_peer/flash_mla_sm120_triton.py --with-predecessor > $R/full_run.log 2>&1
grep -vE "^\|" $R/full_run.log | tail -22
rm -f $R/full/*.so; cd $R && tar czf $OUT/r.tgz .
