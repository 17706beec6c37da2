#!/usr/bin/env bash
# scripts/device/gov2.sh — issue #20's GOV2-scale run in one call: the
# topic-model `qp gen` at DOCS (default 25M) documents (scripts/device/
# gen25m.sh: time, peak memory, qp stats), then, in what is left of BUDGET
# seconds (default 570), `qp bench query` on that index: the first 10,000
# TREC 2006 queries, top-10, AND / OR / AND+OR on the GPU (--profile: time
# split, OR pruning shares) and on the CPU engine with 16 workers (AND skip,
# OR maxscore), every row checked identical to its mode's first.
# Carry bin/dev (bin/dev/data/qp.xz and the TREC logs): scripts/device/unpack.sh first.
# Output: gen25m.sh's files, $OUT/bench-query.log, $OUT/query.csv.
source scripts/device/lib.sh
t0=$(date +%s)
left() { echo $(( ${BUDGET:-570} - ($(date +%s) - t0) )); }
GENLIMIT=${GENLIMIT:-420} bash scripts/device/gen25m.sh
[ -s /tmp/g25m.qp ] || { echo "no index"; exit 1; }
t1=$(date +%s)
head -10000 "$bin/data/06.efficiency_topics.txt" >/tmp/q06.txt
timeout $(( $(left) - 5 )) "$bin/qp" bench query /tmp/g25m.qp /tmp/q06.txt --device gpu \
  --thread-counts 16 --and-algos skip --or-algos maxscore --profile --modes "${MODES:-and,or,andor}" \
  --csv "$OUT/query.csv" >"$OUT/bench-query.log" 2>&1
echo "qp bench query: rc=$? in $(( $(date +%s) - t1 ))s"
grep -vE '^\s*$' "$OUT/bench-query.log" | tail -40
echo "total $(( $(date +%s) - t0 ))s"
