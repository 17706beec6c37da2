#!/bin/sh
# wah.sh — GPU run of the WAH bitmap work (cuda/wah.go, kernels/wah.cu,
# qp bench wah) on the device machine. Expects, built on the dev machine:
#   CGO_ENABLED=0 go test -c -o bin/dev/wah/cuda.test ./cuda
#   CGO_ENABLED=0 go build -o bin/dev/wah/qp ./cmd/qp
#   mkdir -p bin/dev/wah/data && cp /work/shared/data/queries/0[56].efficiency_topics.txt bin/dev/wah/data/
# Writes logs, CSV and SVG under $OUT. About 1-2 minutes.
set -u
OUT=${OUT:-/tmp/wah-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
D=bin/dev/wah
nvidia-smi -L >"$OUT/gpu.txt" 2>&1
echo "== cuda WAH tests" | tee "$OUT/summary.txt"
(cd cuda && timeout 120 "../$D/cuda.test" -test.run 'WAH|QueryScan' -test.count=1 -test.v) >"$OUT/cuda-test.log" 2>&1
echo "rc=$?" | tee -a "$OUT/summary.txt"
grep -E '^(--- |ok|FAIL|PASS)' "$OUT/cuda-test.log" | tee -a "$OUT/summary.txt"
echo "== gen" | tee -a "$OUT/summary.txt"
(cd "$D" && timeout 90 ./qp gen --docs 2000000 --out /tmp/g.qp --quiet --queries data/05.efficiency_topics.txt --queries data/06.efficiency_topics.txt) >"$OUT/gen.log" 2>&1
echo "rc=$?" | tee -a "$OUT/summary.txt"
echo "== bench wah (query log 06, 1000 queries)" | tee -a "$OUT/summary.txt"
timeout 150 "$D/qp" bench wah /tmp/g.qp "$D/data/06.efficiency_topics.txt" --limit 1000 \
	--csv "$OUT/wah.csv" --svg "$OUT/wah.svg" >"$OUT/bench-wah.log" 2>&1
echo "rc=$?" | tee -a "$OUT/summary.txt"
cat "$OUT/bench-wah.log" | tee -a "$OUT/summary.txt"
