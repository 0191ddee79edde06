#!/usr/bin/env bash
# v39 run 1 (device, last minutes of the session; was v37 run 5): a probe of s_n64.patch (S as one m64n64k16 a
# k-step, Q read once; buildable once each warpgroup stages its own output rows). Same-call A/B,
# one round, no GPU tests (not shippable from this run): old = the shipped tree, new = .dev/n64tree
# (aad82ed + the patch). Bench rows carry the `ok` accuracy check against the reference.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
( OUT=$R/ab ROUNDS=1 BENCH_EXTRA="--heads 64 128" timeout 200 bash bench/kernel_ab.sh . .dev/n64tree ) > $R/ab.txt 2>&1
sed -n '/^build/p;/^shape/,$p' $R/ab.txt; grep -h '"ok": false' $R/ab/*.json | head -3
rm -rf $R/ab/*.so; cd $R && tar czf $OUT/r.tgz .
