#!/usr/bin/env bash
# scripts/device/prof-ab.sh — Nsight Compute profiles of one decoder kernel
# in several builds (issue #3): for each build NAME in BINS, the "full"
# section set and the per-instruction SASS page of $KERNEL (default
# pfordelta) decoding one list of $L integers (default 2^24) in
# TestDecodeSweep, into $OUT/NAME-details.txt and $OUT/NAME-sass.csv, and
# the headline metrics on stdout (duration, instructions executed, issue
# slots busy, occupancy, hit rates).
# Build first, one folder per build (the fatbin is embedded at build time):
#   make kernels && CGO_ENABLED=0 go test -c -o bin/NAME/decode.test ./bench/decode
# and carry every bin/NAME.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
[ -x "$NCU" ] || { echo "no ncu"; exit 1; }
k=${KERNEL:-pfordelta}
for b in ${BINS:-old dev}; do
  QP_DECODE_CSV="$OUT/$b.csv" QP_DECODE_LENGTHS=${L:-16777216} QP_DECODE_KERNELS=$k timeout 200 "$NCU" \
    --kernel-name "qp_decode_$k" --launch-skip 4 --launch-count 1 --set full --import-source no -o "$OUT/$b" -f \
    "bin/$b/decode.test" -test.run TestDecodeSweep -test.v >"$OUT/$b-run.log" 2>&1
  echo "== $b: ncu rc=$?"; grep -E "Gint/s|FAIL|ERR" "$OUT/$b-run.log" | tail -3
  "$NCU" --import "$OUT/$b.ncu-rep" --page details >"$OUT/$b-details.txt" 2>&1
  "$NCU" --import "$OUT/$b.ncu-rep" --page source --csv --print-source sass >"$OUT/$b-sass.csv" 2>/dev/null
  rm -f "$OUT/$b.ncu-rep"
  grep -E 'Duration|Executed Instructions |Issue Slots Busy|Executed Ipc Active|L1/TEX Hit|L2 Hit|Warp Cycles Per Issued|Achieved Occupancy|DRAM Throughput|Registers Per' \
    "$OUT/$b-details.txt" | sed -E 's/ +/ /g'
done
