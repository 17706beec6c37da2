#!/usr/bin/env bash
# scripts/device/ab.sh — decoder kernels of several builds side by side
# (issue #3): TestDecodeSweep of each build's decode.test (bench/decode), the builds
# alternating, twice (the spread between the two rounds is the noise), into
# $OUT/BUILD-ROUND.csv and .log; the G ints/s lines on stdout.
#
# Build first, one folder per build (the fatbin is embedded at build time):
#   make kernels && CGO_ENABLED=0 go test -c -o bin/NAME/decode.test ./bench/decode
# and carry every bin/NAME. Environment: BINS (default "old dev"), K (the
# kernels, names as in BenchmarkDecode; default pfordelta,bp128), LENGTHS
# (default 2^14, 2^20, 2^24, 2^26), TIMEOUT (seconds per sweep, 120).
# Exits 1 when a sweep failed.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
rc=0
for round in 1 2; do
  for b in ${BINS:-old dev}; do
    QP_DECODE_CSV="$OUT/$b-$round.csv" QP_DECODE_LENGTHS=${LENGTHS:-16384,1048576,16777216,67108864} \
      QP_DECODE_KERNELS=${K:-pfordelta,bp128} \
      timeout "${TIMEOUT:-120}" "bin/$b/decode.test" -test.run TestDecodeSweep -test.v >"$OUT/$b-$round.log" 2>&1
    r=$?
    echo "== $b round $round rc=$r"
    [ $r -ne 0 ] && rc=1
    grep -E 'Gint/s|FAIL|panic' "$OUT/$b-$round.log" | sed -E 's/ +/ /g' | cut -c1-100
  done
done
exit $rc
