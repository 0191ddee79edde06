#!/usr/bin/env bash
# Session 51, device call 2: v76's full run on its own source (the default build, QSHARE on): GPU tests
# on the shipped and the SM120-register builds, memcheck / racecheck, the WS racecheck probe, the smoke
# at TP 4, the bench table with the Triton peer, the product's GPU suite (install-kernels, doctor
# --cluster, smoke, smoke --long, the cluster smoke) and a second table if time is left
# (bench/kernel_full_record.sh). Carry .dev/s30 and .dev/devwheels/wheelcache, with the older results
# held out (bash bench/device_hold_results.sh out kernel_h200_v76_full; back after). Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash bench/kernel_full_record.sh
