#!/usr/bin/env bash
# scripts/device/auto3.sh — issue 20 §4 for branch auto3: `qp query
# --device auto` (a race of both processors measures their streams,
# auto_race.go) against the faster of `--device gpu` and `--device cpu`,
# and main's `--device auto` (old), through auto2.sh's blocks: per
# collection, query set and mode the new binary's gpu, cpu and auto and
# the old binary's auto, ROUNDS rounds (default 2, ABBA order), every run
# compared with the others ("runs identical", "none equals gpu's").
#
# Carry bin/dev as auto2.sh says (qp.xz = this branch, qp-old.xz = main,
# qp.test.xz, 06.efficiency_topics.txt, gcide.qp.xz, gcide.known.tsv).
# Defaults: COLL=gcide, PARTS="trec known", REPS_TREC=10 (TREC'06 ×10 =
# 100,000 queries; "100" for 1M), ROUNDS=2, TOTAL=450 (no block starts
# after it). Read $OUT/auto3-summary.txt: per block and round "auto/faster"
# and "old/faster", then "RANGE <block>: auto/faster A-B old/faster C-D",
# the runs' comparison lines and the new auto runs' routing lines
# ("streams: cpu N queries in S segments (X µs per query) gpu …, R races").
bash scripts/device/unpack.sh
TAG=auto3 ROUNDS=${ROUNDS:-2} REPS_TREC=${REPS_TREC:-10} TOTAL=${TOTAL:-450} \
  exec bash scripts/device/auto2.sh
