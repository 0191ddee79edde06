#!/usr/bin/env bash
# v72's device record (session 46, call 1). What ran is this file at 6330311; its steps are
# bench/kernel_full_record.sh, unchanged. Carry .dev/s30 and .dev/devwheels/wheelcache.
set -uo pipefail
cd "$(dirname "$0")/../../.."
exec bash bench/kernel_full_record.sh
