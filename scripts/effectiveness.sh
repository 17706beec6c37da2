#!/usr/bin/env bash
# Reproduces docs/EFFECTIVENESS.md: BM25 (k1=0.9, b=0.4, Porter stemming,
# Lucene's English stop words) on the five classic test collections in
# ../shared/data/collections, top-1000 OR runs, scored by `qp eval`, next to
# the published reference runs in ../shared/data/reference.
#   scripts/effectiveness.sh [QP_BINARY] > table.md
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ge 1 ]; then qp=$1; else make -s build >&2; qp=bin/qp; fi
shared=${QP_SHARED:-../shared}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
metric() { awk -v m="$1" '$1==m {print $3}'; }
echo "| collection | docs | queries judged | qp MAP | qp P@10 | qp nDCG@10 | reference run MAP | reference P@10 | reference nDCG@10 |"
echo "|---|---|---|---|---|---|---|---|---|"
for c in cacm cisi cranfield lisa npl; do
  d=$shared/data/collections/$c
  "$qp" index --quiet --in "$d/docs.jsonl" --out "$tmp/$c.qp" --stem english --stopwords english >/dev/null
  "$qp" query "$tmp/$c.qp" --device cpu --quiet --mode or -k 1000 ${QP_QUERY_FLAGS:-} --queries "$d/queries.tsv" --run "$tmp/$c.run" >/dev/null
  "$qp" eval "$tmp/$c.run" "$d/qrels" > "$tmp/$c.eval"
  ref=$shared/data/reference/bm25check.$c.run
  "$qp" eval "$ref" "$d/qrels" > "$tmp/$c.ref"
  docs=$(wc -l < "$d/docs.jsonl")
  printf "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n" "$c" "$docs" "$(metric num_q < "$tmp/$c.eval")" \
    "$(metric map < "$tmp/$c.eval")" "$(metric P_10 < "$tmp/$c.eval")" "$(metric ndcg_cut_10 < "$tmp/$c.eval")" \
    "$(metric map < "$tmp/$c.ref")" "$(metric P_10 < "$tmp/$c.ref")" "$(metric ndcg_cut_10 < "$tmp/$c.ref")"
done
