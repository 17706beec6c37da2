#!/usr/bin/env bash
# scripts/device/kfuse.sh — branch kfuse (issues 25, 20, 24): fewer
# launches, copies and waits per GPU AND list step (scans without their
# single-CTA partials launch, qp_and_select = the selection's scan + the
# block list + the previous count next to the totals, qp_and_compact =
# the flags' scan + the compaction, and the steps end once the first
# candidate's query has no further list; docs/GPU-QUERY.md "Fewer launches
# per step (kfuse)"). Old = main's build, new = this branch, on GCIDE with
# the TREC 2006 log: it runs scripts/device/gpuhost.sh (same carry: bin/dev
# from scripts/device/build.sh, with bin/dev/data/qp-old.xz, gcide.qp.xz,
# 06.efficiency_topics.txt and, for the owner rows, gpu-old.test.xz: main's
# `CGO_ENABLED=0 go test -c ./engine/gpu`), then prints the lines that
# matter here:
#   ratio and|or bench new/old   GPU-only `qp bench query` q/s (first
#                                10,000 queries; medians of ROUNDS)
#   ratio and|or diag new/old    `qp bench sched --diagnose 0` GPU q/s
#   split and old|new            the AND batch split: owner time, "inside N
#                                driver calls" (events on: about twice the
#                                unprofiled calls), device time
#   hostprep batch driver calls  unprofiled calls per 4,500-query AND
#                                batch (BenchmarkHostPrep/batch; emulator:
#                                142 old, 50 new)
# ROUNDS (default 3), MODES (default "and or") as gpuhost.sh. About 20 s a
# run: 3 rounds of both modes, 4 minutes.
set -u
OUT=${OUT:-/tmp/out}
ROUNDS=${ROUNDS:-3} MODES=${MODES:-and or} OUT=$OUT bash scripts/device/gpuhost.sh >"$OUT/kfuse-gpuhost.log" 2>&1
rc=$?
echo "gpuhost.sh rc=$rc (log: $OUT/kfuse-gpuhost.log, results: $OUT/gpuhost.txt)"
grep -E '^(ratio|median|split|hostprep)' "$OUT/gpuhost.txt"
exit $rc
