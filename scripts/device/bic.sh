#!/usr/bin/env bash
# scripts/device/bic.sh — issue 22, binary interpolative coding: decode speed
# and CPU query speed of the CPU-only codecs interpolative and bp128ip
# against bp128, on GCIDE in input and BP order, on the GPU machine's quiet
# CPU (16 cores). No GPU is used.
# Prepare on the Go machine:
#   bash scripts/device/build.sh
#   xz -T2 -c /tmp/qp-data/collections/gcide/docs.jsonl >bin/dev/data/gcide.jsonl.xz
# On the device (carry ["bin/dev"]; about 4 minutes on 16 cores):
#   bash scripts/device/unpack.sh; bash scripts/device/bic.sh
# Writes under $OUT: index-<codec>-<order>.log, decode-<order>.txt
# (`qp bench decode --lengths none --device cpu`: the index's lists
# re-encoded with each codec, docIDs/s and docIDs+freqs/s on 1 and 16
# cores) and query-<round>-<codec>-<order>.txt (`qp bench query --device
# cpu`, first 10,000 TREC'06 queries, top-10, AND skip and OR MaxScore /
# BlockMax-WAND on 1 and 16 threads; two rounds, codecs interleaved), and
# prints the q/s rows.
source scripts/device/lib.sh
q=/tmp/q06-10k.txt
head -10000 "$bin/data/06.efficiency_topics.txt" >"$q"
codecs=(bp128 interpolative bp128ip)
for o in input bp; do
  for c in "${codecs[@]}"; do
    "$bin/qp" index --in /tmp/gcide.jsonl --out "/tmp/gcide-$c-$o.qp" --stem english --stopwords english \
      --codec "$c" --docid-order "$o" >"$OUT/index-$c-$o.log" 2>&1 || { echo "index $c $o failed"; tail -3 "$OUT/index-$c-$o.log"; exit 1; }
    echo "index $c $o: $(grep -E 'bits/docID' "$OUT/index-$c-$o.log" | tail -1)"
  done
  timeout 120 "$bin/qp" bench decode "/tmp/gcide-bp128-$o.qp" --lengths none --device cpu --time 500ms \
    --codecs bp128,bp128ip,interpolative,pfordelta,rice >"$OUT/decode-$o.txt" 2>&1
  echo "== decode, GCIDE $o order"; tail -6 "$OUT/decode-$o.txt"
done
for r in 1 2; do
  for o in input bp; do
    for c in "${codecs[@]}"; do
      timeout 100 "$bin/qp" bench query "/tmp/gcide-$c-$o.qp" "$q" --device cpu --modes and,or --and-algos skip \
        --or-algos maxscore,bmw --thread-counts 1,16 >"$OUT/query-$r-$c-$o.txt" 2>&1
      echo "-- round $r $c $o"; grep -E '^(and|or) ' "$OUT/query-$r-$c-$o.txt"
    done
  done
done
rm -f /tmp/gcide-*-*.qp
