#!/usr/bin/env bash
# scripts/device/andprune.sh — issue 20 §4: the potential of block-max
# pruning of GPU AND candidates at GOV2 scale, measured on the CPU cores
# (bench/andprune: per TREC 2006 AND query, k = 10, the share of the
# shortest list's blocks, candidates and lookups whose upper bound is below
# the true k-th score or a cheaply found θ; docs/GPU-QUERY.md, "Block-max
# pruning of AND candidates"). No GPU is used. One call (≤ 10 min).
#
# Index: /tmp/g25m.qp if a warm machine kept it (gen25m.sh), else
# /tmp/g10m-topics.qp, else a fresh 10M topic-model index (lib.sh's
# gen10m_topics: qp gen --model topics, ~4-5 min on 16 cores, kept in
# /tmp/g10m-topics.qp for later calls; not /tmp/g10m.qp, which other
# scripts build with --model independent).
#
# Prepare here (about 35 MB, carry bin/ap):
#   mkdir -p bin/ap/data && cp ../shared/data/queries/0[56].efficiency_topics.txt bin/ap/data/ &&
#   CGO_ENABLED=0 go build -o bin/ap/qp ./cmd/qp &&
#   CGO_ENABLED=0 go test -c -o bin/ap/andprune.test ./bench/andprune
# On the device: BIN=bin/ap bash scripts/device/andprune.sh
# Writes under $OUT: gen.log (when it built the index), andprune.txt (the
# tables: all AND queries, those of ≥ 2 terms, those with ≥ 10 results),
# and prints them. QUERIES (default 10000) limits the queries; IDX names
# another index.
source scripts/device/lib.sh
idx=${IDX:-}
if [ -z "$idx" ]; then
  for f in /tmp/g25m.qp /tmp/g10m-topics.qp; do
    if [ -s "$f" ]; then idx=$f; break; fi
  done
fi
if [ -z "$idx" ]; then
  idx=/tmp/g10m-topics.qp
  gen10m_topics || exit 1
fi
ls -l "$idx"
left=$(( 560 - SECONDS ))
[ $left -gt 30 ] || { echo "no time left for the measurement (rerun: the index is kept)"; exit 1; }
t=$(date +%s)
QP_ANDPRUNE_INDEX=$idx QP_ANDPRUNE_QUERIES=${QUERIES:-10000} timeout $left "$bin/andprune.test" \
  -test.run '^TestIndex$' -test.v -test.timeout "${left}s" >"$OUT/andprune.txt" 2>&1
rc=$?
echo "== andprune on $idx: rc $rc, $(( $(date +%s) - t ))s, $(nproc) cores"
cat "$OUT/andprune.txt"
exit $rc
