#!/usr/bin/env bash
# Session 33's LARGE16 split-K S candidate (-DDSPARKCTL_LARGE16_SPLIT_K=1, off by default), for the
# next device session: v53 against it in one call (bench/kernel_candidate_check.sh: GPU tests and
# outputs against v53, 3 alternating bench rounds of the short rows and the 64/128-head rows,
# memcheck, racecheck on the sanitizer subset, whose LARGE16 case runs 2 splits, i.e. chains, and
# the product's smoke at TP 4). ~8-9 minutes; run2.sh has the phase timelines.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=$OUT NAME=l16k FLAGS=-DDSPARKCTL_LARGE16_SPLIT_K=1 ROUNDS=3 timeout 570 bash bench/kernel_candidate_check.sh
