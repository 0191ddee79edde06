#!/usr/bin/env bash
# PREPARED in session 23 (no device time left), for the next session's first call: the four in-tree
# candidates (all off by default; the default build's sm_90a SASS equals the tested v40's, per function)
# as build variants of one tree, GPU tests on each (a hang costs TEST_TIMEOUT), a bit-for-bit comparison
# of each with the base (bench/compare_builds.py: all four claim unchanged outputs), then one round of
# the short rows and the 64 / 128-head rows (~7 minutes; more rounds for the winners in a second call).
#   qfast   -DDSPARKCTL_WS_Q_FAST                  the WS consumers' common-case Q conversion in its own short loop
#   qearly  -DDSPARKCTL_WS_Q_EARLY                 the WS consumers' Q loads before the split's tile range
#   rpb4    -DDSPARKCTL_COMBINE_ROWS_PER_BLOCK=4   4 (token, head) rows per combine block on large grids
#   clus    -DDSPARKCTL_WS_SPLIT_CLUSTER           the WS kernel's 2-4 splits as a cluster, reduced over DSMEM (no combine)
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=$R/abn TESTS=1 COMPARE=1 TEST_TIMEOUT=150 ROUNDS=1 timeout 560 bash bench/kernel_abn.sh base= qfast=-DDSPARKCTL_WS_Q_FAST \
  qearly=-DDSPARKCTL_WS_Q_EARLY rpb4=-DDSPARKCTL_COMBINE_ROWS_PER_BLOCK=4 clus=-DDSPARKCTL_WS_SPLIT_CLUSTER 2>&1 | tee $R/abn.txt | grep -vE "^(dspark|decode) H=(16|32)"
rm -rf /tmp/kabn_* $R/abn/*.pt; cd $R && tar czf $OUT/r.tgz .
