#!/usr/bin/env bash
# v37 run 4 (device): Nsight Compute (full set) of the shipped v37 WS kernel at the bench's big shape
# (128 heads +1024 T = 64) and DSpark +512 T = 50: is a tile's ~5,800 cycles shared-memory or tensor-pipe
# bound? (bench/kernel_ncu.sh; summary via bench/ncu_summary.py)
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/kb'), Path('/tmp/kb/build.log'))" > /dev/null || exit 1
mkdir -p /tmp/ncu
DSPARKCTL_KERNEL_SO=/tmp/kb/dsparkctl_sparse_mla_sm_90a.so OUT=/tmp/ncu timeout 280 bash bench/kernel_ncu.sh big dspark 2>&1 | tail -60
ncu -i /tmp/ncu/prof.ncu-rep --page raw --csv --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_active 2>/dev/null | cut -c1-400 | head -12
cd /tmp/ncu && rm -f prof.ncu-rep && tar czf $OUT/ncu.tgz . && ls -la $OUT
