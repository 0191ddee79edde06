# Sourced by the device scripts (bench/kernel_device_run.sh, bench/kernel_candidate_check.sh): the
# kernel checks they both run, written once. PY: the Python to use (default python3); CHECK_TIMEOUT:
# seconds each check may run (none if unset), so a hung candidate costs that, not the device call.
#   kernel_sanitizers SO RC_SO LINES   memcheck on SO's sanitizer subset (and the clustered CTAs),
#                                       racecheck on RC_SO's (the WS kernel's rendezvous build on
#                                       sm_90a: racecheck misreads the shipped bar.arrive hand-off),
#                                       the last LINES lines of each
#   kernel_ws_race_probe RC_SO LOG     racecheck over bench/racecheck_ws_probe.py; one summary line
#   kernel_smoke SO JSON               dsparkctl smoke --kernel bundled --tp 4 on SO; one verdict line

_kernel_check_limit() {
  if [ -n "${CHECK_TIMEOUT:-}" ]; then timeout "$CHECK_TIMEOUT" "$@"; else "$@"; fi
}

kernel_sanitizers() {
  local so=$1 rc=$2 lines=$3
  echo "== memcheck ($so)"
  DSPARKCTL_KERNEL_SO=$so _kernel_check_limit compute-sanitizer --tool memcheck --leak-check no "${PY:-python3}" -m pytest tests/test_kernel_gpu.py -q \
    -p no:cacheprovider -k "sanitizer_subset or clustered_ctas" 2>&1 | tail -"$lines"
  echo "== racecheck ($rc)"
  DSPARKCTL_KERNEL_SO=$rc _kernel_check_limit compute-sanitizer --tool racecheck "${PY:-python3}" -m pytest tests/test_kernel_gpu.py -q \
    -p no:cacheprovider -k "sanitizer_subset and T2" 2>&1 | tail -"$lines"
}

kernel_ws_race_probe() {
  local rc=$1 log=$2
  DSPARKCTL_KERNEL_SO=$rc _kernel_check_limit compute-sanitizer --tool racecheck "${PY:-python3}" bench/racecheck_ws_probe.py > "$log" 2>&1
  echo "== racecheck, warp-specialized kernel (racecheck build, bench/racecheck_ws_probe.py): $(grep -c '^ok' "$log") launches ok | $(grep SUMMARY "$log")"
}

kernel_smoke() {
  local so=$1 json=$2 rc
  DSPARKCTL_KERNEL_SO=$so _kernel_check_limit "${PY:-python3}" -m dsparkctl smoke --kernel bundled --tp 4 --json > "$json" 2> "${json%.json}.err"
  rc=$?
  echo "smoke (--kernel bundled --tp 4): rc $rc $("${PY:-python3}" bench/smoke_verdict.py "$json" 2>&1)"
}
