#!/usr/bin/env bash
# Session 24, device call 5 (the session's last device minutes): two WS candidates on v41, built in
# parallel, GPU tests on each, bit-for-bit comparison with v41 (raw: expected equal; lazy: a
# numerics change, expected unequal but within tolerance), then 2 same-call bench rounds.
#   lazy  -DDSPARKCTL_WS_LAZY_RESCALE  the running max moves only past +8 (base 2); O's rescale skipped when a warp's rows all keep theirs
#   raw   -DDSPARKCTL_WS_RAW_ADDR      the producer's raw reads from one per-thread address and valid flag
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R/abn; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for v in v41: lazy:-DDSPARKCTL_WS_LAZY_RESCALE raw:-DDSPARKCTL_WS_RAW_ADDR; do
  n=${v%%:*}; f=${v#*:}
  python3 -c "import sys; from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/kabn_$n'), Path('$R/abn/build_$n.log'), extra_nvcc=[x for x in sys.argv[1].split(',') if x])" "$f" &
done
wait
OUT=$R/abn PREBUILT=1 TESTS=1 COMPARE=1 TEST_TIMEOUT=120 ROUNDS=2 timeout 330 bash bench/kernel_abn.sh v41= lazy=-DDSPARKCTL_WS_LAZY_RESCALE raw=-DDSPARKCTL_WS_RAW_ADDR 2>&1 | tee $R/abn.txt | grep -vE "^decode H=(16|32)"
rm -rf /tmp/kabn_* $R/abn/*.pt; cd $R && tar czf $OUT/r.tgz .
