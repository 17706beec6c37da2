#!/bin/sh
# isect.sh — GPU verification and benchmark of the batched intersection
# kernels (cuda/kernels/intersect.cu, cuda/kern/intersect.go) on the device
# machine. Expects prebuilt binaries (built on the Go machine, repo root):
#
#	CGO_ENABLED=0 go test -c -o bin/dev/kern.test ./cuda/kern
#	CGO_ENABLED=0 go build -o bin/dev/qp ./cmd/qp
#	cp ../shared/data/queries/0[56].efficiency_topics.txt bin/dev/data/
#
# Runs the differential GPU tests (-test.run Intersect), builds a 2M-document
# GOV2-like index (~15 s) and runs `qp bench intersect` over 10,000 TREC 2006
# efficiency queries at three PARA thresholds. About 2-4 minutes; logs and
# the CSV go to $OUT.
set -u
OUT=${OUT:-/tmp/isect-out}
mkdir -p "$OUT"
D=${BIN:-bin/dev}
rc=0
echo "== cuda tests (Intersect)" | tee "$OUT/summary.txt"
(cd cuda/kern && timeout 300 ../../$D/kern.test -test.run Intersect -test.v -test.count=1) >"$OUT/cuda-test.log" 2>&1 || rc=1
tail -5 "$OUT/cuda-test.log" | tee -a "$OUT/summary.txt"
echo "== qp gen 2M docs" | tee -a "$OUT/summary.txt"
[ -s /tmp/g2m.qp ] || $D/qp gen --model independent --docs 2000000 --out /tmp/g2m.qp --quiet \
	--queries $D/data/05.efficiency_topics.txt --queries $D/data/06.efficiency_topics.txt >"$OUT/gen.log" 2>&1 || rc=1
tail -3 "$OUT/gen.log" | head -2 | tee -a "$OUT/summary.txt"
echo "== qp bench intersect" | tee -a "$OUT/summary.txt"
timeout 420 $D/qp bench intersect /tmp/g2m.qp $D/data/06.efficiency_topics.txt --limit 10000 \
	--thresholds 65536,1048576,4194304 --device gpu --csv "$OUT/intersect.csv" >"$OUT/bench.log" 2>&1 || rc=1
cat "$OUT/bench.log" | tee -a "$OUT/summary.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$OUT/gpu.txt" 2>&1
echo "rc=$rc" | tee -a "$OUT/summary.txt"
exit $rc
