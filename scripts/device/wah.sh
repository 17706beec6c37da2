#!/bin/sh
# wah.sh — GPU run of the WAH bitmap work (cuda/kern/wah.go, kernels/wah.cu,
# qp bench wah) on the device machine. Expects, built on the dev machine:
#   CGO_ENABLED=0 go test -c -o bin/dev/kern.test ./cuda/kern
#   CGO_ENABLED=0 go build -o bin/dev/qp ./cmd/qp
#   mkdir -p bin/dev/data && cp /work/shared/data/queries/0[56].efficiency_topics.txt bin/dev/data/
# Writes three files under $OUT: wah.log (summary lines "== step rc=N"
# first, then the GPU, the test log, the gen log and the bench output),
# wah.csv and wah.svg. About 2-4 minutes (tests <= 120 s, gen <= 90 s,
# bench <= 150 s by their timeouts).
set -u
OUT=${OUT:-/tmp/wah-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
D=${BIN:-bin/dev}
T=$(mktemp -d)
step() { # step NAME: appends "== NAME rc=N (S s)" to the summary
	echo "== $1 rc=$2 ($3 s)" >>"$T/summary"
}
nvidia-smi -L >"$T/gpu" 2>&1
s=$(date +%s)
(cd cuda/kern && timeout 120 "../../$D/kern.test" -test.run 'WAH|QueryScan' -test.count=1 -test.v) >"$T/test" 2>&1
step "cuda WAH tests" $? $(($(date +%s) - s))
grep -E '^(--- |ok|FAIL|PASS)' "$T/test" >>"$T/summary"
s=$(date +%s)
[ -s /tmp/g2m.qp ] || (cd "$D" && timeout 90 ./qp gen --model independent --docs 2000000 --out /tmp/g2m.qp --quiet --queries data/05.efficiency_topics.txt --queries data/06.efficiency_topics.txt) >"$T/gen" 2>&1
step "gen 2M docs" $? $(($(date +%s) - s))
s=$(date +%s)
timeout 150 "$D/qp" bench wah /tmp/g2m.qp "$D/data/06.efficiency_topics.txt" --limit 1000 --reps 3 --roa-queries 250 \
	--csv "$OUT/wah.csv" --svg "$OUT/wah.svg" >"$T/bench" 2>&1
step "bench wah (query log 06, 1000 queries)" $? $(($(date +%s) - s))
{
	cat "$T/summary"
	echo
	echo "==== gpu"; cat "$T/gpu"
	echo "==== bench wah"; cat "$T/bench"
	echo "==== gen"; cat "$T/gen"
	echo "==== cuda tests"; cat "$T/test"
} >"$OUT/wah.log"
rm -rf "$T"
cat "$OUT/wah.log" | head -60
