#!/usr/bin/env bash
# scripts/device/auto6.sh — issue 20 §4 for branch auto6: `qp query
# --device auto`'s first run (a race, no routing profile) where the
# race's loser's in-flight pieces no longer hold the stream (the CPU
# re-runs the GPU's stragglers, the late copy cancelled and dropped;
# auto_race.go, racePolicy.rerun), the GPU makes no more response
# buffers than its own stream once the race goes on as it, and the CPU's
# race pieces run the GPU's fanned-out host work between their queries
# and yield (raceBetween), against the faster of `--device gpu` and
# `--device cpu`, through auto2.sh's blocks: per query set and mode the
# new binary's gpu, cpu, auto with a new profile ("race"), the same with
# QP_QUERY_TUNE=racenohelp ("nohelp": the re-runs and the buffers
# without the help), and lead27's auto with a new profile each run
# ("oldrace": every old run a race too; cliab.sh's plain "old" would
# start its second round on the profile its first left), ROUNDS rounds
# (default 2, ABBA order), every run compared with oldrace's ("runs
# identical").
#
# Carry bin/dev as auto2.sh says (qp.xz = branch auto6, qp-old.xz =
# lead27, 06.efficiency_topics.txt, gcide.qp.xz, gcide.known.tsv; no
# qp.test.xz: the root tests ran on the emulator). Defaults: COLL=gcide,
# PARTS="trec known", REPS_TREC=10 (TREC'06 ×10 = 100,000 queries),
# ROUNDS=2, TOTAL=200, V10AUTO="oldrace race nohelp".
# Read $OUT/auto6-summary.txt: per block and round "auto/faster" (race),
# "old/faster" (lead27's race) and "nohelp/faster", the RANGE lines, the
# "runs identical" lines, and the race's routing lines ("re-ran N of the
# other's pieces", "N copies dropped", "stopped at X ms"). Confirmed where
# auto/faster ≥ 0.8 in every block and ≥ old/faster in most.
bash scripts/device/unpack.sh
TAG=auto6 ROUNDS=${ROUNDS:-2} REPS_TREC=${REPS_TREC:-10} TOTAL=${TOTAL:-200} \
  V10AUTO=${V10AUTO:-"oldrace race nohelp"} exec bash scripts/device/auto2.sh
