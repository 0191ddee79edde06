#!/usr/bin/env bash
# v32 run 4 (device): are the WS kernel's racecheck reports (staging writes vs the read-back behind a
# whole-CTA barrier, run 3) tied to setmaxnreg? The same tree with the three setmaxnreg calls removed
# (168 registers everywhere: spills, racecheck only), racecheck on the probe, twice each.
set -uo pipefail
R=$OUT/r; mkdir -p $R; export PYTHONPATH=$PWD
rm -rf /tmp/t_nomax && mkdir -p /tmp/t_nomax && cp -r dsparkctl kernels tests bench pyproject.toml /tmp/t_nomax/
sed -i -E '/^\s*setmaxnreg_(inc|dec)<W::REGS_[A-Z]+>\(\);/d' /tmp/t_nomax/kernels/sparse_mla_decode.cu
grep -c "setmaxnreg_" /tmp/t_nomax/kernels/sparse_mla_decode.cu
mk() { (cd $2 && PYTHONPATH=$2 python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/rc_$1'), Path('$R/build_$1.log'))") || tail -20 $R/build_$1.log; }
mk base $PWD & mk nomax /tmp/t_nomax & wait
grep -A2 ws_kernel $R/build_nomax.log | grep -E "spill" | head -2
for b in base nomax; do for i in 1 2; do
  DSPARKCTL_KERNEL_SO=/tmp/rc_$b/dsparkctl_sparse_mla_sm_90a.so SPLITS=1,2 timeout 100 compute-sanitizer --tool racecheck --print-limit 5 python3 bench/racecheck_ws_probe.py > $R/rc_${b}_$i.log 2>&1
  echo "$b $i: $(grep -c '^ok' $R/rc_${b}_$i.log) ok | $(grep SUMMARY $R/rc_${b}_$i.log)"
done; done
