#!/usr/bin/env bash
# v39 run 2 (device; the command as given to the device tool, from the repository root): the GPU
# tests on the tree with s_n64.patch applied (its sm_90a SASS is the shipped v39's, per function).
export PYTHONPATH=$PWD; python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/kb'), Path('$OUT/build.log'))" > /dev/null && DSPARKCTL_KERNEL_SO=/tmp/kb/dsparkctl_sparse_mla_sm_90a.so timeout 120 python3 -m pytest tests/test_kernel_gpu.py -q -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests.log | tail -3
