#!/usr/bin/env bash
# One call on the GPU machine: every GPU test, then GPU-vs-CPU query
# throughput and the scheduler experiment on a GOV2-like synthetic index.
# Build first, here (no Go on the GPU machine):
#   mkdir -p bin/verify/data && cp ../shared/data/queries/0[56].efficiency_topics.txt bin/verify/data/
#   CGO_ENABLED=0 go build -o bin/verify/qp ./cmd/qp
#   CGO_ENABLED=0 go test -c -o bin/verify/gpu.test ./engine/gpu/
#   CGO_ENABLED=0 go test -c -o bin/verify/cuda.test ./cuda/
# then run `bash scripts/gpu-verify.sh` there with bin/ carried; logs go to $OUT.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p "$out"
v=bin/verify; docs=${QP_VERIFY_DOCS:-2000000}
export QP_QUERIES=$PWD/$v/data
$v/qp devices 2>&1 | tee "$out/devices.log"
if [ -z "${QP_VERIFY_SKIP_TESTS:-}" ]; then
(cd cuda && ../$v/cuda.test -test.run . -test.timeout 300s 2>&1 | tail -40) > "$out/cuda-test.log"; echo "cuda tests: $(grep -cE '^(--- FAIL|FAIL)' "$out/cuda-test.log") failures; $(tail -1 "$out/cuda-test.log")"
(cd engine/gpu && ../../$v/gpu.test -test.run . -test.timeout 300s 2>&1 | tail -40) > "$out/gpu-test.log"; echo "gpu engine tests: $(grep -cE '^(--- FAIL|FAIL)' "$out/gpu-test.log") failures; $(tail -1 "$out/gpu-test.log")"
fi
# The vocabulary must hold the query logs' terms (../shared is not on the GPU machine).
$v/qp gen --model independent --docs "$docs" --out /tmp/g.qp --quiet --queries $v/data/05.efficiency_topics.txt --queries $v/data/06.efficiency_topics.txt 2>&1 | tee "$out/gen.log" | tail -1
$v/qp bench query /tmp/g.qp $v/data/06.efficiency_topics.txt --limit 10000 --device gpu --thread-counts 16 \
  --and-algos skip --or-algos maxscore,taat 2>&1 | tee "$out/bench-query.log"
timeout 200 $v/qp bench sched /tmp/g.qp $v/data/06.efficiency_topics.txt --train 2000 --replay 2000 \
  --rates "${QP_SCHED_RATES:-2000,10000,40000}" 2>&1 | tee "$out/bench-sched.log" | tail -25
