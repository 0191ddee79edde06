#!/usr/bin/env bash
# v33 run 1 (device): the racecheck repro (bench/racecheck_ws_repro.sh: every variant, plain and
# under racecheck), then the shipped WS kernel under racecheck with per-hazard reports (threads,
# addresses) and under synccheck, on the v32 probe (the four sanitizer cases, WS forced).
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
compute-sanitizer --version | tail -1
compute-sanitizer --help 2>&1 | grep -i -A3 "racecheck" > $R/cs_racecheck_options.txt
( OUT=$R/repro RUNS=2 timeout 240 bash bench/racecheck_ws_repro.sh 8 5 ) 2>&1 | tee $R/repro.txt
python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/kbuild'), Path('$R/build.log'))" || exit 1
SO=/tmp/kbuild/dsparkctl_sparse_mla_sm_90a.so
P=bench/racecheck_ws_probe.py
DSPARKCTL_KERNEL_SO=$SO CASES=0,1 SPLITS=2 timeout 100 compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 40 python3 $P > $R/real_rc_hazard.log 2>&1
echo "real racecheck (hazard report): $(grep -c '^ok' $R/real_rc_hazard.log) ok | $(grep SUMMARY $R/real_rc_hazard.log | tr '\n' ' ')"
DSPARKCTL_KERNEL_SO=$SO SPLITS=1,2 timeout 100 compute-sanitizer --tool synccheck python3 $P > $R/real_synccheck.log 2>&1
echo "real synccheck: $(grep -c '^ok' $R/real_synccheck.log) ok | $(grep SUMMARY $R/real_synccheck.log | tr '\n' ' ')"
for v in all bare; do timeout 60 compute-sanitizer --tool synccheck $R/repro/bin/$v 8 5 > $R/repro_synccheck_$v.log 2>&1; echo "repro $v synccheck: $(grep SUMMARY $R/repro_synccheck_$v.log)"; done
cd $R && tar czf $OUT/r.tgz --exclude=./repro/bin . && ls -la $OUT
