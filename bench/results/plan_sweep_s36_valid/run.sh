#!/usr/bin/env bash
# Session 36: is the DSpark plan's one gap (T = 5: SMALL16 at 5 splits 7.98 us against the automatic
# 6 splits' 8.28, since v26) a property of the bench's valid length (133 of topk 192: the 6th
# 32-candidate tile is empty) or of the shape? The host plan cannot see valid lengths, so the same
# forced plans are swept at valid 192 (every tile full) and at 133, T = 5 and 10, without and with
# the 512 extra cache. ~1-2 minutes. Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=/tmp/sv; rm -rf $R; mkdir -p $R
timeout 200 python3 bench/build_kernel.py sm_90a /tmp/kbsv $R/build.log > /dev/null || { echo BUILD FAILED; tail -20 $R/build.log; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/env.txt; python3 -c 'import torch; print(torch.__version__, torch.version.cuda)' >> $R/env.txt
for v in 192 133; do
  DSPARKCTL_KERNEL_SO=/tmp/kbsv/dsparkctl_sparse_mla_sm_90a.so timeout 150 python3 bench/plan_sweep.py --kind dspark --T 5 10 \
    --valid $v --json $R/sweep_valid$v.json --md $R/sweep_valid$v.md > $R/sweep_valid$v.log 2>&1; echo "valid $v rc=$?"
  tail -6 $R/sweep_valid$v.md
done
(cd $R && tar czf "$OUT/r.tgz" .)
