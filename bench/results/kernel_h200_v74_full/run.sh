#!/usr/bin/env bash
# v74's device record (session 48, call 3). What ran was v73's script (this file at 300ecd1); its
# steps are now bench/kernel_full_record.sh, unchanged. Carry .dev/s30 and .dev/devwheels/wheelcache.
set -uo pipefail
cd "$(dirname "$0")/../../.."
exec bash bench/kernel_full_record.sh
