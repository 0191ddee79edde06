#!/usr/bin/env bash
# Session 24, device call 3: the first source-level (per-SASS-instruction) stall profile of the WS
# kernel (bench/kernel_ncu.sh, ncu --set full), v40's shipped build at DSpark T = 50 (+0 and +512)
# and 128 heads +1024 T = 64; and the rejected tail-skip build (../kernel_h200_v41_ws_tail/ws_tail.patch)
# at the 128-head shape, whose full tiles ran 2-5% slower with 14% more SASS: is "no instruction"
# (instruction-cache) stalling a measurable share?
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1
SO=dsparkctl_sparse_mla_sm_90a.so
rm -rf /tmp/tailtree && mkdir /tmp/tailtree && cp -r dsparkctl kernels bench tests pyproject.toml /tmp/tailtree/ \
  && (cd /tmp/tailtree && { patch -p1 -s < bench/results/kernel_h200_v41_ws_tail/ws_tail.patch || git apply bench/results/kernel_h200_v41_ws_tail/ws_tail.patch; }) || echo "PATCH FAILED"
PYTHONPATH=$PWD python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/k_base'), Path('$R/build_base.log'))" &
(cd /tmp/tailtree && PYTHONPATH=$PWD python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/k_tail'), Path('$R/build_tail.log'), extra_nvcc=['-DDSPARKCTL_WS_TAIL'])") &
wait
export PYTHONPATH=$PWD
for job in base:ds50 base:big base:dspark tail:big; do
  v=${job%%:*}; sh=${job#*:}
  DSPARKCTL_KERNEL_SO=/tmp/k_$v/$SO OUT=$R/ncu_${v}_$sh timeout 150 bash bench/kernel_ncu.sh $sh > $R/ncu_${v}_$sh.txt 2>&1
  echo "== $v $sh"; grep -E "launch|==|reasons|no_instruction|HGMMA|BAR|SYNCS|WARPGROUP" $R/ncu_${v}_$sh.txt | head -24
  rm -f $R/ncu_${v}_$sh/prof.ncu-rep
done
cd $R && tar czf $OUT/r.tgz .
