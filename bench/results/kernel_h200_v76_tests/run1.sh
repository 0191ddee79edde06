#!/usr/bin/env bash
# Session 51, device call 4: the GPU tests on the default build of the session's last kernel source
# (v76's SASS, 22 of 22 functions equal to the full record's build; the host's cluster launch of the
# halves now decided by kWsDhQShareBuild, true in this build as before) with the new 2-split test.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
mkdir -p "$OUT/r"
python3 bench/build_kernel.py sm_90a /tmp/kbuild "$OUT/r/build.log" || { tail -30 "$OUT/r/build.log"; exit 1; }
grep -c "C75" "$OUT/r/build.log"
DSPARKCTL_KERNEL_SO=/tmp/kbuild/dsparkctl_sparse_mla_sm_90a.so timeout 200 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider -rA > "$OUT/r/gpu_tests.log" 2>&1
echo "pytest rc=$?"; tail -3 "$OUT/r/gpu_tests.log"; grep -E "two_split|FAILED" "$OUT/r/gpu_tests.log" | head
