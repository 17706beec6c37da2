#!/usr/bin/env bash
# scripts/device/q10m.sh — issue #4's headline run: a GOV2-like `qp gen`
# index of $DOCS (default 10M) documents holding the TREC 2005/2006
# efficiency query terms, then
#  1. `qp bench query --device gpu --profile`: the first 10,000 TREC 2006
#     queries, top-10, AND / OR / AND+OR on the GPU (batch latency mean,
#     p50, p99, time split) and on the CPU engine with 16 workers, every
#     row's results checked identical to its mode's first row;
#  2. BenchmarkSearchBatch on the same index (QP_BENCH_INDEX): GPU rows per
#     PARA threshold c, k = 10 / 1000 and OR strategy (tiled, dense).
# About 6-8 minutes on an H200; logs into $OUT. Environment (optional):
# DOCS, MODES (and,or,andor), THRESHOLDS (GPU PARA c list, e.g. 1M,4M,16M),
# GPUAND, GPUOR, ORTH, BITMAPS (lists for --gpu-and, --gpu-or,
# --gpu-or-threshold, --gpu-bitmaps),
# GOBENCH=0 (skip step 2), PATTERN, BENCHTIME, BUDGET (seconds, 540),
# REGEN=1 (rebuild /tmp/g10m.qp even when a warm machine kept it).
#
# Build first (on the Go machine, repository root):
#   mkdir -p bin/dev/data && cp ../shared/data/queries/0[56].efficiency_topics.txt bin/dev/data/
#   CGO_ENABLED=0 go build -o bin/dev/qp ./cmd/qp
#   CGO_ENABLED=0 go test -c -o bin/dev/gpu.test ./engine/gpu
. scripts/device/lib.sh
t0=$(date +%s)
left() { echo $(( ${BUDGET:-540} - ($(date +%s) - t0) )); }
gen10m || exit 1
t1=$(date +%s)
timeout $(( $(left) - 60 )) $bin/qp bench query /tmp/g10m.qp $bin/data/06.efficiency_topics.txt --limit 10000 --device gpu \
  --thread-counts 16 --and-algos skip --or-algos maxscore --profile --modes "${MODES:-and,or,andor}" \
  ${GPUAND:+--gpu-and $GPUAND} ${GPUOR:+--gpu-or $GPUOR} ${ORTH:+--gpu-or-threshold $ORTH} ${BITMAPS:+--gpu-bitmaps $BITMAPS --plot-bitmaps $OUT/bitmaps.svg} \
  ${THRESHOLDS:+--thresholds $THRESHOLDS} --csv "$OUT/query.csv" --plot "$OUT/query.svg" >"$OUT/bench-query.log" 2>&1
echo "qp bench query: rc=$? in $(( $(date +%s) - t1 ))s"
grep -vE '^\s*$' "$OUT/bench-query.log" | tail -40
if [ "${GOBENCH:-1}" = 1 ] && [ "$(left)" -gt 45 ]; then
  QP_BENCH_INDEX=/tmp/g10m.qp timeout "$(left)" $bin/gpu.test -test.run '^$' -test.bench "${PATTERN:-BenchmarkSearchBatch\$/gpu/}" \
    -test.benchtime "${BENCHTIME:-2x}" -test.timeout 600s >"$OUT/bench-go.log" 2>&1
  echo "go bench: rc=$?"
  grep -E 'Benchmark|FAIL|panic' "$OUT/bench-go.log" | sed -E 's/ +/ /g'
fi
echo "total $(( $(date +%s) - t0 ))s"
