#!/usr/bin/env bash
# Session 52, device call 2: bench/kernel_fuzz.py --explain over failing seeds of call 1 (shipped build):
# every layout's ratio on the same data, a torch fp32 reference's own ratio, the worst elements.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
R=$OUT/r; mkdir -p "$R"
python3 bench/build_kernel.py sm_90a /tmp/kbuild "$R/build.log" > /dev/null || { tail -30 "$R/build.log"; exit 1; }
SO=/tmp/kbuild/dsparkctl_sparse_mla_sm_90a.so
PLAIN=1860,2273,3344,3910,4063,4761,5780,5953,6033,6585,8037,8252
OTHER=23,30,181,293,448,875,1280,1124,1826,5784,1169,455,217,266,520
DSPARKCTL_KERNEL_SO=$SO timeout 240 python3 bench/kernel_fuzz.py --explain --seeds $PLAIN,$OTHER > "$R/explain.jsonl" 2> "$R/explain.err"
echo "explain rc=$?"; tail -5 "$R/explain.err"; wc -l "$R/explain.jsonl"
