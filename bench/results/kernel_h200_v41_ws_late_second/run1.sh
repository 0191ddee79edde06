#!/usr/bin/env bash
# session 23 run 6 (device): candidate -DDSPARKCTL_WS_LATE_SECOND: the WS producer issues tile 1's
# copies once tile 0's rows have landed, not both at the start (run 5: at 125 CTAs Q is ready ~9,400
# cycles after entry; every CTA's first two tiles in one burst saturate DRAM). GPU tests + same-call
# A/B (bench/kernel_abn.sh, 2 rounds); timelines of both; racecheck of its rendezvous build (probe).
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for v in base late; do
  x=""; [ $v = late ] && x=-DDSPARKCTL_WS_LATE_SECOND
  nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE $x bench/kernel_timeline.cu -o /tmp/tl_$v 2> $R/tl_build_$v.log || echo TL BUILD FAILED $v
done &
python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/kb_rc'), Path('$R/build_rc.log'), extra_nvcc=['-DDSPARKCTL_WS_RACECHECK_SYNC', '-DDSPARKCTL_WS_LATE_SECOND'])" > /dev/null &
OUT=$R/abn TESTS=1 ROUNDS=2 timeout 330 bash bench/kernel_abn.sh base= late=-DDSPARKCTL_WS_LATE_SECOND 2>&1 | tee $R/abn.txt | grep -vE "^(dspark|decode) H=(16|32)"
wait
DSPARKCTL_KERNEL_SO=/tmp/kb_rc/dsparkctl_sparse_mla_sm_90a.so timeout 100 compute-sanitizer --tool racecheck python3 bench/racecheck_ws_probe.py > $R/racecheck_probe.log 2>&1
echo "racecheck probe (late, rendezvous build): $(grep -c '^ok' $R/racecheck_probe.log) ok | $(grep SUMMARY $R/racecheck_probe.log)"
for v in base late; do
  for s in "64 192 133 0 50" "64 192 133 512 25" "64 192 133 512 50" "64 128 128 1024 64" "128 128 128 1024 64"; do timeout 30 /tmp/tl_$v $s >> $R/timeline_$v.jsonl; done
done
python3 - $R <<'PY' | tee $R/fixed_costs.txt
import json, sys
wg0 = ['ids_issued', 'ids_published', 'q_landed', 'first_copy_issue', 'q_to_smem', 'tile_landed', 'dequant']
print('build | shape | plan | us/call | CTA median us | Q ready (cyc) | wg0 wait (cyc, all tiles) | wg0 loop (cyc) | written (cyc)')
for v in ('base', 'late'):
    for line in open(f'{sys.argv[1]}/timeline_{v}.jsonl'):
        a = json.loads(line); ph = a['phase_cycles']
        print(f"{v} | H={a['H']} +{a['extra']} T={a['T']} | s{a['splits']} {a['ctas']} CTAs | {a['stream_us_per_call']} | {a['cta_ns_median']/1000:.1f} | "
              f"{ph['ws_q_ready_at'][0]:.0f} | {ph['ids_issued'][0]:.0f} | {sum(ph[k][0] for k in wg0):.0f} | {ph['ws_written_at'][0]:.0f}")
PY
rm -rf /tmp/kabn_*; cd $R && tar czf $OUT/r.tgz .
