#!/usr/bin/env bash
# scripts/device/auto5.sh — issue 20 §4 for branch auto5: `qp query
# --device auto` whose race judges the GPU by its pipelined rate (its
# time after its pipeline is full over the queries answered since;
# auto_race.go, racePolicy.rate) rather than by its pipeline's fill,
# against the faster of `--device gpu` and `--device cpu`, and lead26's
# `--device auto` (old: the race that judged the GPU by its fill, run 7),
# through auto2.sh's blocks: per query set and mode the new binary's
# gpu, cpu and auto with a new profile ("race"), and the old binary's
# auto, ROUNDS rounds (default 1), every run compared with the old
# auto's ("runs identical").
#
# Carry bin/dev as auto2.sh says (qp.xz = this branch, qp-old.xz =
# lead26, 06.efficiency_topics.txt, gcide.qp.xz, gcide.known.tsv; no
# qp.test.xz: the root tests ran on the emulator, and they cost device
# time). Defaults: COLL=gcide, PARTS="trec known", REPS_TREC=10 (TREC'06
# ×10 = 100,000 queries), ROUNDS=1, TOTAL=150, V10AUTO="old race".
# Read $OUT/auto5-summary.txt: per block "auto/faster" (the race run) and
# "old/faster", the "runs identical" lines, and the race's routing lines
# ("1 races (the last: cpu … stopped at X ms …, gpu … (R µs per query)")):
# the GPU's race rate R now its pipelined rate. Confirmed where
# auto/faster ≥ 0.8 in every block, TREC AND+OR's included (run 7: 0.50).
bash scripts/device/unpack.sh
TAG=auto5 ROUNDS=${ROUNDS:-1} REPS_TREC=${REPS_TREC:-10} TOTAL=${TOTAL:-150} \
  V10AUTO=${V10AUTO:-"old race"} exec bash scripts/device/auto2.sh
