#!/usr/bin/env bash
# Session 52, device call 5: call 4's steps (run4/run4.sh: tests/test_kernel_gpu.py whole, the fuzz's GPU
# seeds, the campaign from seed 0) on the tree where the row helper is kernel_smoke.row_slice and the
# rows-alone check is judged per kernel (bitwise where the lone row's plan runs the same arithmetic).
exec bash "$(dirname "$0")/../run4/run4.sh"
