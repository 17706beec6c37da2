#!/usr/bin/env bash
# scripts/device/andeng.sh — GPU AND path (issue #4): the engine/gpu tests
# (differential against the CPU, every codec, every Options.AndSearch), then
# BenchmarkSearchBatchAnd (binary search vs Parallel Merge Find 1-4 levels,
# bp128 frequencies by slot vs decoded; launches and synchronizations per
# batch) on the 50k-document gen collection with the TREC 2006 queries.
# About 2-3 minutes on an H200; logs into $OUT.
#
# Build first (on the Go machine, repository root):
#   mkdir -p bin/dev/data
#   cp /work/shared/data/queries/0[56].efficiency_topics.txt bin/dev/data/
#   flock /tmp/qp-kernels.lock make kernels
#   CGO_ENABLED=0 go test -c -o bin/dev/gpu.test ./engine/gpu
#
# Environment (optional): SKIP_TESTS=1, BENCHTIME (default 5x).
. scripts/device/lib.sh
rc=0
start=$(date +%s)
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout 150 "$bin/gpu.test" -test.timeout 150s -test.v >"$OUT/tests.log" 2>&1 || rc=1
  grep -E '^(--- FAIL|FAIL|ok|PASS)' "$OUT/tests.log" | tail -20
  echo "tests: rc=$rc in $(( $(date +%s) - start ))s"
fi
start=$(date +%s)
timeout 150 "$bin/gpu.test" -test.run '^$' -test.bench 'BenchmarkSearchBatchAnd' -test.benchtime "${BENCHTIME:-5x}" \
  -test.timeout 150s >"$OUT/bench.log" 2>&1 || rc=1
grep -E 'Benchmark|gen:|FAIL|ok' "$OUT/bench.log"
echo "bench: in $(( $(date +%s) - start ))s"
exit $rc
