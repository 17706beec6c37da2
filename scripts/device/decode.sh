#!/usr/bin/env bash
# scripts/device/decode.sh — GPU decoders (issue #3): the cuda package's
# decoder tests (long blocks included), then `qp bench decode` (every codec,
# lists of 2^10 .. 2^26, GPU and all CPU cores) on a small generated index; table, CSV and SVG plot
# into $OUT. About 2-4 minutes on an H200.
#
# Build first (on the Go machine, repository root):
#   mkdir -p bin/dev
#   flock /tmp/qp-kernels.lock make kernels
#   CGO_ENABLED=0 go test -c -o bin/dev/kern.test ./cuda/kern
#   CGO_ENABLED=0 go build -o bin/dev/qp ./cmd/qp
#
# Environment (optional): LENGTHS (default 2^10..2^26), CODECS (all),
# BATCH (2^22: integers per launch for short lists), SKIP_TESTS=1.
. scripts/device/lib.sh
start=$(date +%s)
rc=0
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  # Decoder tests: widths, random, unusual, fuzz (GPU vs CPU verdicts),
  # corrupt, API, index, CPU bench + plot. TestDecodeSweep skips itself.
  timeout 120 "$bin/kern.test" -test.run 'Decode' -test.v -test.count=1 >"$OUT/tests.log" 2>&1
  trc=$?
  echo "cuda decoder tests: rc=$trc in $(( $(date +%s) - start ))s"
  grep -E '^(--- FAIL|FAIL|ok|PASS)' "$OUT/tests.log" | head -20
  [ $trc -ne 0 ] && rc=$trc
fi
t1=$(date +%s)
"$bin/qp" gen --model independent --docs 200000 --out /tmp/gdec.qp --quiet >"$OUT/gen.log" 2>&1 || { echo "qp gen failed"; cat "$OUT/gen.log"; exit 1; }
echo "qp gen: $(( $(date +%s) - t1 ))s"
t2=$(date +%s)
cmd=("$bin/qp" bench decode /tmp/gdec.qp --device gpu --codecs "${CODECS:-all}" --lengths "${LENGTHS:-2^10..2^26}"
  --batch "${BATCH:-2^22}" --postings 0 --csv "$OUT/decode.csv" --plot "$OUT/decode.svg")
echo "${cmd[*]}" >"$OUT/command.txt"
"${cmd[@]}" >"$OUT/bench.log" 2>&1
brc=$?
echo "qp bench decode: rc=$brc in $(( $(date +%s) - t2 ))s"
grep -E '^(GPU|target)' "$OUT/bench.log"
grep -E '^(bp128|pfordelta|eliasfano)[a-z0-9-]* +2\^(14|24|26) ' "$OUT/bench.log"
[ $brc -ne 0 ] && { tail -5 "$OUT/bench.log"; rc=$brc; }
echo "total $(( $(date +%s) - start ))s"
exit $rc
