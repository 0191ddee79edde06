#!/usr/bin/env bash
# Session 40's last device call, on the shipped tree (v68: DSPARKCTL_WS_DH_RING3 on by default; its sm_90a
# SASS is the full run's, bench/results/kernel_h200_ws_dh_ring3/run3/full/): the kernel's GPU tests on the default
# build, then the
# whole of bench/gpu_suite.sh with .dev/devwheels/wheelcache carried (the SGLang wheel; the rest of
# .dev/devwheels does not fit the transfer limit beside the tree). Packs $OUT/r.tgz.
set -uo pipefail
SUITE_TMP=/tmp/s40 exec bash "$(dirname "$0")/../kernel_h200_s39_suite/run.sh"
