#!/usr/bin/env bash
# v32 run 2 (device): where racecheck's WS-kernel hazards come from. Builds: as committed; the
# epilogue's two consumer barriers on a barrier id of their own (5); the main launch without PDL.
set -uo pipefail
R=$OUT/r; mkdir -p $R; export PYTHONPATH=$PWD
P=bench/racecheck_ws_probe.py
mk() { local name=$1 tree=$2; shift 2; (cd $tree && PYTHONPATH=$tree python3 -c "import sys; from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/rc_$name'), Path('$R/build_$name.log'), extra_nvcc=sys.argv[1:])" "$@") || { echo "build $name failed"; tail -20 $R/build_$name.log; }; }
rm -rf /tmp/t_bar5 && mkdir -p /tmp/t_bar5 && git archive HEAD | tar -x -C /tmp/t_bar5 && cp kernels/* /tmp/t_bar5/kernels/
python3 - <<'PY'
from pathlib import Path
p = Path('/tmp/t_bar5/kernels/sparse_mla_decode.cu'); s = p.read_text()
a = "  nbar_sync(kWsConsumers, kCT);\n  float* sOut"; b = "  nbar_sync(kWsConsumers, kCT);\n  ws_write_rows"
assert s.count(a) == 1 and s.count(b) == 1
s = s.replace(a, "  nbar_sync(5, kCT);\n  float* sOut").replace(b, "  nbar_sync(5, kCT);\n  ws_write_rows")
p.write_text(s)
PY
mk base $PWD & mk bar5 /tmp/t_bar5 & mk nopdl $PWD -DDSPARKCTL_NO_MAIN_PDL & wait
for b in base bar5 nopdl; do
  for cs in 0 1 2 3; do
    for sp in 1,2; do
      r=$(DSPARKCTL_KERNEL_SO=/tmp/rc_$b/dsparkctl_sparse_mla_sm_90a.so CASES=$cs SPLITS=$sp timeout 60 compute-sanitizer --tool racecheck --print-limit 3 python3 $P 2>&1)
      echo "$b case$cs splits$sp: $(echo "$r" | grep -c '^ok') ok | $(echo "$r" | grep -E 'RACECHECK SUMMARY' | sed 's/=========//')"
      [ "$b$cs" = base0 ] && echo "$r" | head -40 > $R/base_case0_s2.txt
    done
  done
done
