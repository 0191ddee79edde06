#!/usr/bin/env bash
# v60 (LARGE16 split-K, now the default), second device call: the phase timeline of the LARGE16
# rows (DSpark T = 25 / 10, T = 1 at 64 heads +1024 and 128 heads +512) on v53 (=0) and on v60.
set -uo pipefail
cd "$(dirname "$0")/../../.."
A=/tmp/tlk; mkdir -p $A
for v in v53 l16k; do
  x=-DDSPARKCTL_LARGE16_SPLIT_K=0; [ $v = l16k ] && x=
  # shellcheck disable=SC2086
  timeout 120 nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE $x bench/kernel_timeline.cu -o /tmp/tl_$v > /dev/null 2>&1 || echo "TL BUILD FAILED $v"
  for s in "64 192 133 0 25" "64 192 133 0 10" "64 128 128 1024 1" "128 128 128 512 1"; do
    timeout 20 /tmp/tl_$v $s >> $A/timeline_$v.jsonl
  done
done
python3 - $A <<'PY'
import json, sys
for v in ("v53", "l16k"):
    for line in open(f"{sys.argv[1]}/timeline_{v}.jsonl"):
        a = json.loads(line)
        ph = a["phase_cycles"]
        print(v, a["H"], a["extra"], a["T"], "us %.2f" % a["stream_us_per_call"], "tiles", a["tiles_max"],
              "s_mma", ph["s_mma"][0], "s", ph["s"][0], "dequant", ph["dequant"][0], "pv", ph["pv"][0])
PY
(cd $A && tar czf "$OUT/r.tgz" .)
