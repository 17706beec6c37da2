#!/usr/bin/env bash
# scripts/device/gov2tune.sh — issue #20's GOV2-size figures and the GPU
# settings at that size, in one call: the topic-model index of DOCS (default
# 25M) documents (gen25m.sh, ~4.6 min on 16 cores; a warm machine's
# /tmp/g25m.qp is reused unless REGEN=1), then on the first 10,000 TREC 2006
# queries, top-10:
#  1. GPU settings, GPU rows only (--gpu-only, --profile): AND with each
#     candidate-block search (binsearch, lr, pmf2) at PARA c = 12M and 48M
#     postings; OR and AND+OR at OR batch thresholds 1G and 4G;
#  2. the figures: AND, OR, AND+OR on the GPU (default settings) and on the
#     CPU engine with 16 workers (AND skip, OR maxscore), rows checked
#     identical to the mode's first.
# Output: gen25m.sh's files, $OUT/tune-{and,or}.log, $OUT/bench-query.log,
# $OUT/query.csv; a summary on stdout.
source scripts/device/lib.sh
t0=$(date +%s)
if [ -s /tmp/g25m.qp ] && [ "${REGEN:-0}" != 1 ]; then echo "reusing /tmp/g25m.qp"; else
  GENLIMIT=${GENLIMIT:-360} bash scripts/device/gen25m.sh >"$OUT/gen-summary.txt" 2>&1
  head -4 "$OUT/gen-summary.txt"
fi
[ -s /tmp/g25m.qp ] || { echo "no index"; exit 1; }
head -10000 "$bin/data/06.efficiency_topics.txt" >/tmp/q06.txt
q() { timeout "$1" "$bin/qp" bench query /tmp/g25m.qp /tmp/q06.txt --device gpu "${@:2}"; }
if [ "${TUNE:-1}" = 1 ]; then
  q 90 --gpu-only --profile --modes and --gpu-and binsearch,lr,pmf2 --thresholds 12M,48M >"$OUT/tune-and.log" 2>&1
  echo "== tune and (rc $?)"; grep -E '^(mode|and) ' "$OUT/tune-and.log"
  q 120 --gpu-only --profile --modes or,andor --gpu-or-threshold 1G,4G >"$OUT/tune-or.log" 2>&1
  echo "== tune or (rc $?)"; grep -E '^(mode|or|andor) ' "$OUT/tune-or.log"
fi
left=$(( ${BUDGET:-580} - ($(date +%s) - t0) ))
q $(( left - 5 )) --thread-counts 16 --and-algos skip --or-algos maxscore --profile \
  --modes "${MODES:-and,or,andor}" --csv "$OUT/query.csv" >"$OUT/bench-query.log" 2>&1
echo "== bench query (rc $?)"
grep -vE '^\s*$' "$OUT/bench-query.log" | tail -32
echo "total $(( $(date +%s) - t0 ))s"
