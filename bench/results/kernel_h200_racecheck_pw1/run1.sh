#!/usr/bin/env bash
# Prepared in session 42 (not yet run; ~2 minutes): does racecheck misread a named barrier between the
# producer and warpgroup 1 only? Session 42's split-issue candidate (../kernel_h200_ws_dh_split_issue0/)
# added one (id 6, 256 threads), and its racecheck build reported hazards between accesses it did not
# touch (Q's stores against warpgroup 0's Q reads, the lo buffer's write against its read). The repro
# kernel (bench/racecheck_ws_repro.cu) checks its own output; its variants here:
#   all_sync    every hand-off a rendezvous (0 hazards in session 33's runs)
#   q_lds_sync  the same, warpgroup 0 also reading Q by ld.shared after the consumers' barrier
#   pw1_sync    that plus the producer / warpgroup 1 barrier as a rendezvous (the candidate's racecheck build)
#   pw1_mbar    the same with the P hand-offs on mbarriers
# Hazards in pw1_* but not q_lds_sync, with 0 mismatches, would say racecheck misreads such a barrier,
# and a candidate that needs one (tile 0's conversion shared with warpgroup 1) should hand off on an
# mbarrier instead. One line a run: variant, mismatches, hazards.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=$OUT/repro RUNS=2 VARIANTS_RUN="all_sync q_lds_sync pw1_sync pw1_mbar" timeout 400 bash bench/racecheck_ws_repro.sh 8 5
(cd "$OUT" && tar czf r.tgz repro && rm -rf repro)
