#!/usr/bin/env bash
# Session 53, device call 1: run4's steps (tests/test_kernel_gpu.py whole, the fuzz's GPU seeds, a
# campaign from a fresh seed) on e802c54's source, the tree session 52 ended on (its last refactors of
# fuzz.py / reference.py had been tested on the CPU only).
exec env BUDGET=${BUDGET:-60} SEED0=${SEED0:-700000} bash "$(dirname "$0")/../run4/run4.sh"
