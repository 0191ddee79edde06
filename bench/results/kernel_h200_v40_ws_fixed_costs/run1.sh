#!/usr/bin/env bash
# session 23 run 5 (device): (1) where a WS CTA's time goes outside its tile loop: timeline build
# (thread 0's cycles since entry when Q is in shared memory, when the rows are staged, when they are
# written: slots 21-23) at the WS bench shapes, medians over CTAs; (2) a candidate: the WS kernel's
# fp32 partial rows stored straight from the accumulators (-DDSPARKCTL_WS_DIRECT_PARTIALS), no
# staging: GPU tests + same-call A/B (bench/kernel_abn.sh, 2 rounds); timelines of both.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for v in base direct; do
  x=""; [ $v = direct ] && x=-DDSPARKCTL_WS_DIRECT_PARTIALS
  nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE $x bench/kernel_timeline.cu -o /tmp/tl_$v 2> $R/tl_build_$v.log || { echo TL BUILD FAILED $v; tail $R/tl_build_$v.log; }
done &
OUT=$R/abn TESTS=1 ROUNDS=2 timeout 330 bash bench/kernel_abn.sh base= direct=-DDSPARKCTL_WS_DIRECT_PARTIALS 2>&1 | tee $R/abn.txt | grep -vE "^(dspark|decode) H=(16|32)"
wait
for v in base direct; do
  for s in "64 192 133 0 50" "64 192 133 512 25" "64 192 133 512 50" "64 128 128 512 8" "64 128 128 1024 64" "128 128 128 1024 64"; do timeout 30 /tmp/tl_$v $s >> $R/timeline_$v.jsonl; done
done
python3 - $R <<'PY' | tee $R/fixed_costs.txt
import json, sys
wg0 = ['ids_issued', 'ids_published', 'q_landed', 'first_copy_issue', 'q_to_smem', 'tile_landed', 'dequant']
print('build | shape | plan | us/call | CTA median us | tiles max | Q ready (cyc) | wg0 loop (cyc) | staged (cyc) | written (cyc) | combine end after main (ns)')
for v in ('base', 'direct'):
    for line in open(f'{sys.argv[1]}/timeline_{v}.jsonl'):
        a = json.loads(line); ph = a['phase_cycles']
        loop = sum(ph[k][0] for k in wg0)
        print(f"{v} | H={a['H']} +{a['extra']} T={a['T']} | {a['heads_per_cta']}h s{a['splits']} {a['ctas']} CTAs | {a['stream_us_per_call']} | {a['cta_ns_median']/1000:.1f} | {a['tiles_max']} | "
              f"{ph['ws_q_ready_at'][0]:.0f} | {loop:.0f} | {ph['ws_staged_at'][0]:.0f} | {ph['ws_written_at'][0]:.0f} | {a.get('combine_end_after_main_end_ns', '-')}")
PY
rm -rf /tmp/kabn_*; cd $R && tar czf $OUT/r.tgz .
