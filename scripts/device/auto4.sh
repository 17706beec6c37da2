#!/usr/bin/env bash
# scripts/device/auto4.sh — issue 20 §4 for branch auto4: `qp query
# --device auto` whose race decides in a few ms (auto_race.go) and whose
# repeat runs start on a routing profile without a race
# (auto_profile.go), against the faster of `--device gpu` and `--device
# cpu`, and main's `--device auto` (old), through auto2.sh's blocks: per
# query set and mode the new binary's gpu, cpu, auto with a new profile
# ("race": it races and writes the profile) and auto again with that
# profile ("repeat"), auto with QP_QUERY_TUNE=gpuhandoff and a new profile
# ("handoff": once the CPU stopped, the rest on the GPU's own stream, as
# branch auto4 did; the default goes on racing as the GPU's stream, as
# auto3's), and the old binary's auto, ROUNDS rounds (default 2, ABBA
# order; a round-2 repeat runs on the profile of round 1's runs), every
# run compared with the old auto's ("runs identical"). V10AUTO="old race
# repeat" drops handoff.
#
# Carry bin/dev as auto2.sh says (qp.xz = this branch, qp-old.xz = main,
# qp.test.xz, 06.efficiency_topics.txt, gcide.qp.xz, gcide.known.tsv).
# Defaults: COLL=gcide, PARTS="trec known", REPS_TREC=10 (TREC'06 ×10 =
# 100,000 queries), ROUNDS=2, TOTAL=420 (no block starts after it).
# Read $OUT/auto4-summary.txt: per block and round "auto/faster" (the
# race run), "old/faster", "repeat/faster" and "handoff/faster", then
# "RANGE <block>:
# auto/faster A-B old/faster C-D repeat/faster E-F", the runs' comparison
# lines and the first round's race and repeat routing lines ("N races
# (the last: cpu … stopped at X ms …)"; a repeat: "0 races" is not
# printed, "1 started on the routing profile" is).
bash scripts/device/unpack.sh
TAG=auto4 ROUNDS=${ROUNDS:-2} REPS_TREC=${REPS_TREC:-10} TOTAL=${TOTAL:-420} \
  V10AUTO=${V10AUTO:-"old race repeat handoff"} exec bash scripts/device/auto2.sh
