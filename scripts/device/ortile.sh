#!/usr/bin/env bash
# scripts/device/ortile.sh — tiled GPU OR (issue #4): the engine/gpu tests
# (differential against the CPU; both OR strategies, both top-k selectors,
# tile boundaries, overflow fallback), then BenchmarkSearchBatch's OR and
# AND+OR rows, tiled vs dense, k=10 and k=1000, with the per-phase profile
# (decode/score/topk/transfer ms per batch) and the CPU's OR rows, on gen
# collections of 2M documents and (when time is left) 10M documents, with
# the TREC 2006 efficiency queries. At most ~5 minutes; logs into $OUT.
#
# Build first (on the Go machine, repository root):
#   mkdir -p bin/dev/data
#   cp /work/shared/data/queries/0[56].efficiency_topics.txt bin/dev/data/
#   flock /tmp/qp-kernels.lock make kernels
#   CGO_ENABLED=0 go test -c -o bin/dev/gpu.test ./engine/gpu
#
# Environment (optional): SKIP_TESTS=1, BENCHTIME (default 3x),
# DOCS (default "2000000 10000000"), QUERIES (default 10000).
. scripts/device/lib.sh
export QP_BENCH_QUERIES=${QUERIES:-10000}
rc=0
t0=$(date +%s)
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout 100 "$bin/gpu.test" -test.timeout 100s -test.v >"$OUT/tests.log" 2>&1 || rc=1
  grep -E '^(--- FAIL|FAIL|ok|PASS)' "$OUT/tests.log" | tail -20
  grep -E -- '--- (PASS|FAIL): TestOr' "$OUT/tests.log" | sed 's/ (.*//' | sort | uniq -c | tail -8
  echo "tests: rc=$rc in $(( $(date +%s) - t0 ))s"
fi
# OR rows (tiled and dense) and the CPU's OR rows, one collection size at a time.
pattern='BenchmarkSearchBatch$/(gpu/(or|andor)/.*/or=|cpu/or/)'
for docs in ${DOCS:-2000000 10000000}; do
  left=$(( 290 - ($(date +%s) - t0) ))
  if [ "$left" -lt 60 ]; then
    echo "bench docs=$docs: skipped, ${left}s left"
    continue
  fi
  start=$(date +%s)
  QP_BENCH_DOCS=$docs timeout "$left" "$bin/gpu.test" -test.run '^$' -test.bench "$pattern" \
    -test.benchtime "${BENCHTIME:-3x}" -test.timeout "${left}s" >"$OUT/bench-$docs.log" 2>&1 || rc=1
  grep -E 'Benchmark|gen:|FAIL|ok|panic' "$OUT/bench-$docs.log"
  echo "bench docs=$docs: in $(( $(date +%s) - start ))s"
done
exit $rc
