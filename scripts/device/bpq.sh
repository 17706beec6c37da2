#!/usr/bin/env bash
# scripts/device/bpq.sh — issue 22 on the GPU machine: reorder GCIDE and RFC
# pages by BP there (16 cores) and compare query speed before and after:
# `qp bench query` with the first 10,000 TREC 2006 efficiency queries, top-10,
# on 1 and 16 threads (AND skip, OR MaxScore and BMW) and on the GPU.
# Needs bin/dev/qp and /tmp/gcide.jsonl, /tmp/rfc-pages.qp (scripts/device/unpack.sh).
source scripts/device/lib.sh
q=/tmp/q06-10k.txt
head -10000 "$bin/data/06.efficiency_topics.txt" >"$q"
[ -s /tmp/gcide.qp ] || "$bin/qp" index --in /tmp/gcide.jsonl --out /tmp/gcide.qp --stem english --stopwords english --quiet || exit 1
for c in gcide rfc-pages; do
  t=$(date +%s)
  "$bin/qp" reorder "/tmp/$c.qp" "/tmp/$c-bp.qp" --quiet 2>"$OUT/reorder-$c.log" || { tail -3 "$OUT/reorder-$c.log"; exit 1; }
  echo "== $c reorder on 16 cores: $(( $(date +%s) - t ))s"
  for v in "" -bp; do
    echo "-- $c$v: $("$bin/qp" stats "/tmp/$c$v.qp" 2>&1 | grep -m1 'bp128/bp128')"
    "$bin/qp" bench query "/tmp/$c$v.qp" "$q" --device gpu --modes and,or --and-algos skip --or-algos maxscore,bmw \
      --thread-counts 1,16 2>/dev/null | grep -E '^(and|or) '
  done
done
