#!/usr/bin/env bash
# Session 50, device call 3: v75's full run on its own source (the default build): GPU tests on the
# shipped and the SM120-register builds, memcheck / racecheck, the WS racecheck probe, the smoke at
# TP 4 and the bench table with the Triton peer, then a second table (bench/kernel_full_record.sh
# without the product's suite; carry .dev/s30). (As run, this script wrote those steps out, with the
# full run in run1/ and the second table in reruns/, as the record script does.) Packs $OUT/r.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
SKIP_SUITE=1 bash bench/kernel_full_record.sh
