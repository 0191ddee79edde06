#!/usr/bin/env bash
# Session 27, device call 5: ncu --set full of v44 (the default build of 4653525) for the next
# session: every launch at T = 1, 128 heads +1024 (the T = 1 row furthest from the 10 us target:
# its 32-head main kernel and the 18-split combine), and the warp-row combine alone at DSpark +512
# T = 50 (2 splits, 3,200 rows; it still ends ~4.6 us after the main kernel).
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
SO=/tmp/k44/dsparkctl_sparse_mla_sm_90a.so
timeout 150 python3 bench/build_kernel.py sm_90a /tmp/k44 $R/build.log > /dev/null || echo "BUILD FAILED"
DSPARKCTL_KERNEL_SO=$SO OUT=$R/ncu_t1h128 timeout 120 bash bench/kernel_ncu.sh t1h128 > $R/ncu_t1h128.txt 2>&1
rm -f $R/ncu_t1h128/prof.ncu-rep
mkdir -p $R/ncu_dspark_combine
DSPARKCTL_KERNEL_SO=$SO timeout 120 ncu --set full --import-source no --clock-control none --cache-control none \
  -k regex:combine -f -o $R/ncu_dspark_combine/prof python3 bench/kernel_profile.py ncu dspark > $R/ncu_dspark_combine/ncu.log 2>&1
ncu -i $R/ncu_dspark_combine/prof.ncu-rep --page details --csv | gzip > $R/ncu_dspark_combine/details.csv.gz
ncu -i $R/ncu_dspark_combine/prof.ncu-rep --page raw --csv | gzip > $R/ncu_dspark_combine/raw.csv.gz
ncu -i $R/ncu_dspark_combine/prof.ncu-rep --page source --csv --print-source sass | gzip > $R/ncu_dspark_combine/source.csv.gz
python3 bench/ncu_summary.py $R/ncu_dspark_combine > $R/ncu_dspark_combine.txt 2>&1
rm -f $R/ncu_dspark_combine/prof.ncu-rep
for f in $R/ncu_t1h128.txt $R/ncu_dspark_combine.txt; do echo "== $f"; grep -E "^launch|reasons" $f | head -8; done
cd $R && tar czf $OUT/r.tgz .
