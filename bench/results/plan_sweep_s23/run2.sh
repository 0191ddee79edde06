#!/usr/bin/env bash
# session 23 run 4 (device): the plan change (DSpark T = 50 without the extra cache on the WS kernel,
# unsplit; the WS kernel splits <= 3-tile tokens only into single tiles). GPU tests on the new build,
# then a same-call A/B, 3 rounds of the short rows: old = .dev/ab_old (git archive of 3a50531, v39),
# new = this tree.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
( OUT=$R/ab TESTS=1 ROUNDS=3 timeout 400 bash bench/kernel_ab.sh .dev/ab_old . ) > $R/ab.txt 2>&1
grep -E "passed|failed" $R/ab/gpu_tests.log | tail -2; sed -n '/^build/p;/^shape/,$p' $R/ab.txt; grep -h '"ok": false' $R/ab/*.json | head -3
rm -rf $R/ab/*.so; cd $R && tar czf $OUT/r.tgz .
