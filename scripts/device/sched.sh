#!/usr/bin/env bash
# scripts/device/sched.sh — GPU list cache and scheduler (issue #5):
#  1. the list cache tests and the differential tests on the GPU
#     (engine/gpu: TestListCache*, TestSketch, TestCache*, TestDifferential*);
#  2. BenchmarkListCache: AND and OR queries/s with list caches of 100%,
#     50%, 25%, 10% of the postings (hit rates, MB uploaded, upload wait)
#     on the 50k-document gen collection with the TREC 2006 queries;
#  3. a `qp gen` index of 2M documents (~15 s) and `qp bench sched --report`
#     for AND and OR (delay vs arrival rate, SVG plot + README.md).
# About 4-5 minutes on an H200; logs and reports into $OUT.
#
# Build first (on the Go machine, repository root):
#   mkdir -p bin/dev/data
#   cp /work/shared/data/queries/0[56].efficiency_topics.txt bin/dev/data/
#   CGO_ENABLED=0 go test -c -o bin/dev/gpu.test ./engine/gpu
#   CGO_ENABLED=0 go build -o bin/dev/qp ./cmd/qp
. scripts/device/lib.sh

echo "== tests"
( cd engine/gpu && timeout 60 $bin/gpu.test -test.v -test.short \
    -test.run 'TestListCache|TestSketch|TestCache|TestDifferentialRandom' ) > "$OUT/tests.log" 2>&1
echo "tests rc=$?"; grep -E '^(--- |ok|FAIL|PASS)' "$OUT/tests.log" | tail -20

echo "== BenchmarkListCache"
( cd engine/gpu && timeout 80 $bin/gpu.test -test.run '^$' -test.bench 'BenchmarkListCache' \
    -test.benchtime 3x ) > "$OUT/bench-cache.log" 2>&1
echo "bench rc=$?"; grep -E 'Benchmark|ok|FAIL' "$OUT/bench-cache.log"

echo "== qp gen 2M"
[ -s /tmp/g2m.qp ] || timeout 40 $bin/qp gen --model independent --docs 2000000 --out /tmp/g2m.qp --quiet --queries $bin/data/05.efficiency_topics.txt \
  --queries $bin/data/06.efficiency_topics.txt > "$OUT/gen.log" 2>&1
echo "gen rc=$?"; tail -2 "$OUT/gen.log"

for mode in and or; do
  echo "== qp bench sched --mode $mode"
  timeout 75 $bin/qp bench sched /tmp/g2m.qp $bin/data/06.efficiency_topics.txt --device gpu --mode $mode \
    --train 1500 --replay 1500 --rates 1000,8000 --search-runs 3 --deadline 200ms \
    --report "$OUT/sched-$mode" > "$OUT/sched-$mode.log" 2>&1
  echo "sched $mode rc=$?"; tail -25 "$OUT/sched-$mode.log"
done
ls -la "$OUT"/sched-* 2>/dev/null
