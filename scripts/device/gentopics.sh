#!/usr/bin/env bash
# scripts/device/gentopics.sh — issue #20 part 4 on the new document model:
# `qp gen --model topics` at DOCS documents (default 2M; GOV2's 25M does not
# fit one call yet, see docs/GEN.md), then top-10 AND, OR and AND+OR with the
# first 10,000 TREC 2006 efficiency queries, GPU (with its time split and
# the OR tiles' block-max skipping) against the CPU engine on all cores, and
# the same for the independent model at the same size. Output in $OUT.
source scripts/device/lib.sh
q=/tmp/q06-10k.txt
head -10000 "$bin/data/06.efficiency_topics.txt" >"$q"
for model in topics independent; do
  idx=/tmp/g-$model.qp
  t=$(date +%s)
  timeout "${GENLIMIT:-240}" "$bin/qp" gen --model $model --docs "${DOCS:-2000000}" --out "$idx" --quiet \
    --queries "$bin/data/05.efficiency_topics.txt" --queries "$bin/data/06.efficiency_topics.txt" >"$OUT/gen-$model.log" 2>&1 ||
    { echo "gen $model failed or timed out after $(( $(date +%s) - t ))s"; tail -3 "$OUT/gen-$model.log"; continue; }
  echo "== gen $model ${DOCS:-2000000} docs: $(( $(date +%s) - t ))s; $(tail -1 "$OUT/gen-$model.log")"
  "$bin/qp" bench query "$idx" "$q" --device gpu --modes and,or,andor --and-algos skip --or-algos maxscore,bmw \
    --thread-counts 16 --profile >"$OUT/bench-$model.txt" 2>&1
  grep -E '^(mode|and|or|andor) |tiles accumulated' "$OUT/bench-$model.txt" | cut -c1-200
done
