#!/usr/bin/env bash
# v34 run 1 (device): the WS kernel publishing each converted tile in 4 parts (S starts on the
# first blocks while the producer converts the rest) vs HEAD ba9a72f (one barrier per tile).
# (1) same-call A/B on the 128-head decode rows (the rows the plan routes to WS) + GPU tests;
# (2) the WS layout forced on the 64-head decode rows and the short rows (DSpark), both builds
# alternating; (3) racecheck (rendezvous build) and memcheck of the new form on the WS probe.
set -uo pipefail
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
( OUT=$R/ab128 TESTS=1 ROUNDS=2 BENCH_EXTRA="--heads 128" timeout 300 bash bench/kernel_ab.sh .dev/ab_old ) > $R/ab128.txt 2>&1
grep -E "passed|failed" $R/ab128/gpu_tests.log | tail -1; sed -n '/^shape/,$p' $R/ab128.txt
SO=dsparkctl_sparse_mla_sm_90a.so
for r in 1 2; do for side in old new; do for rows in "--heads 64" "--short"; do
  tag=$(echo "$rows" | tr -d ' -')
  DSPARKCTL_KERNEL_SO=/tmp/kab_$side/$SO timeout 120 python3 bench/bench_kernel.py $rows --no-ref --config large_ws --json $R/ws_${tag}_${side}_$r.json --md $R/ws_${tag}_${side}_$r.md > $R/ws_${tag}_${side}_$r.log 2>&1 || echo "bench failed $side $rows"
done; done; done
python3 - <<'PY'
import json, glob, collections
t = collections.defaultdict(dict)
for f in sorted(glob.glob("/tmp/r/ws_*.json")):
    side = f.split("_")[-2]; r = f.split("_")[-1][0]
    for row in json.load(open(f))["rows"]:
        t[(row["kind"], row["H"], row["extra"], row["T"], row.get("plan"))][f"{side}{r}"] = row["ours_us"]
print("forced large_ws: shape | old1 old2 | new1 new2")
for k, v in t.items():
    print(k, "|", " ".join(f"{v.get(c, float('nan')):.2f}" for c in ("old1", "old2")), "|", " ".join(f"{v.get(c, float('nan')):.2f}" for c in ("new1", "new2")))
PY
python3 -c "from pathlib import Path; from dsparkctl.kernel import build; build.build_extension('sm_90a', Path('/tmp/kb_rc'), Path('$R/build_rc.log'), extra_nvcc=['-DDSPARKCTL_WS_RACECHECK_SYNC'])" > /dev/null
DSPARKCTL_KERNEL_SO=/tmp/kb_rc/$SO timeout 120 compute-sanitizer --tool racecheck python3 bench/racecheck_ws_probe.py > $R/racecheck_ws.log 2>&1
echo "racecheck (rendezvous build): $(grep -c '^ok' $R/racecheck_ws.log) ok | $(grep SUMMARY $R/racecheck_ws.log)"
DSPARKCTL_KERNEL_SO=/tmp/kab_new/$SO timeout 120 compute-sanitizer --tool memcheck python3 bench/racecheck_ws_probe.py > $R/memcheck_ws.log 2>&1
echo "memcheck (shipped form): $(grep -c '^ok' $R/memcheck_ws.log) ok | $(grep SUMMARY $R/memcheck_ws.log)"
DSPARKCTL_KERNEL_SO=/tmp/kab_new/$SO timeout 120 compute-sanitizer --tool synccheck python3 bench/racecheck_ws_probe.py > $R/synccheck_ws.log 2>&1
echo "synccheck (shipped form): $(grep -c '^ok' $R/synccheck_ws.log) ok | $(grep SUMMARY $R/synccheck_ws.log)"
rm -f $R/ab128/*.so; cd $R && tar czf $OUT/r.tgz . && ls -la $OUT
