#!/usr/bin/env bash
# scripts/device/profile.sh — Nsight Compute profiles of the kernels being
# tuned (issues #3 and #4): per kernel, the "full" section set (details
# page: throughput, occupancy, warp stall reasons, launch statistics) and
# the per-instruction SASS source page (stall samples per instruction;
# nvcc 11.8's ptxas crashes on -lineinfo, so SASS, not CUDA lines), into
# $OUT/NAME-details.txt and $OUT/NAME-sass.csv (reports: $OUT/NAME.ncu-rep).
#  - or:  qp_ortile_accumulate_bp128 in BenchmarkSearchBatch's tiled OR row
#         (gen index of $DOCS documents, default 2M; $QUERIES TREC 2006
#         queries, default 2000), launches $SKIP.. ($COUNT of them);
#  - pfd: qp_decode_pfordelta decoding lists of 2^26 integers (TestDecodeSweep).
# PROFILES (default "or pfd") selects. Build first: scripts/device/build.sh.
# (the decoder sweep needs bin/dev/decode.test: go test -c -o bin/dev/decode.test ./bench/decode).
. scripts/device/lib.sh
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
[ -x "$NCU" ] || { echo "no ncu"; exit 1; }
"$NCU" --version | tail -1
report() { # name
  "$NCU" --import "$OUT/$1.ncu-rep" --page details >"$OUT/$1-details.txt" 2>&1
  "$NCU" --import "$OUT/$1.ncu-rep" --page source --csv --print-source sass >"$OUT/$1-sass.csv" 2>"$OUT/$1-sass.err"
  grep -E 'qp_|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Executed Ipc Active|Memory Throughput|L1/TEX Hit|L2 Hit|Warp Cycles Per Issued|No Eligible|Active Warps Per' "$OUT/$1-details.txt" | head -40
}
for p in ${PROFILES:-or pfd}; do
  start=$(date +%s)
  case $p in
  or)
    QP_BENCH_DOCS=${DOCS:-2000000} QP_BENCH_QUERIES=${QUERIES:-2000} timeout 300 "$NCU" --kernel-name regex:qp_ortile_accumulate_bp128 \
      --launch-skip "${SKIP:-0}" --launch-count "${COUNT:-3}" --set full --import-source no -o "$OUT/or" -f \
      "$bin/gpu.test" -test.run '^$' -test.bench 'BenchmarkSearchBatch$/gpu/or/k=10/or=tiled$' -test.benchtime 1x \
      >"$OUT/or-run.log" 2>&1
    echo "== or: rc=$? in $(( $(date +%s) - start ))s"; grep -E 'Benchmark|FAIL|panic|ERR' "$OUT/or-run.log" | tail -5
    report or ;;
  pfd)
    QP_DECODE_CSV="$OUT/pfd.csv" QP_DECODE_LENGTHS=67108864 QP_DECODE_KERNELS=pfordelta timeout 200 "$NCU" \
      --kernel-name qp_decode_pfordelta --launch-skip 4 --launch-count 1 --set full --import-source no -o "$OUT/pfd" -f \
      "$bin/decode.test" -test.run TestDecodeSweep -test.v >"$OUT/pfd-run.log" 2>&1
    echo "== pfd: rc=$? in $(( $(date +%s) - start ))s"; grep -E 'pfordelta|FAIL|panic|ERR' "$OUT/pfd-run.log" | tail -5
    report pfd ;;
  esac
done
