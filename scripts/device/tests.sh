#!/usr/bin/env bash
# scripts/device/tests.sh — every GPU test on the GPU machine: the cuda
# package (driver layer), cuda/kern (decoders of every codec bit-exact
# against the CPU, corrupt-block fuzz, intersection, WAH, query kernels, the
# Go/CUDA struct layouts) and engine/gpu (GPU AND / OR / AND+OR identical to
# the CPU engine for every codec, AND search and OR strategy; list cache;
# bitmap lists; TREC queries on a gen index), the binaries run side by side.
# Logs into $OUT; about 2-3 minutes.
# Build first: scripts/device/build.sh.
. scripts/device/lib.sh
cat "$OUT/device.txt"
start=$(date +%s)
(cd cuda && timeout "${LIMIT:-200}" "$bin/cuda.test" -test.v -test.count=1 -test.timeout 200s) >"$OUT/cuda.log" 2>&1 &
(cd cuda/kern && timeout "${LIMIT:-200}" "$bin/kern.test" -test.v -test.count=1 -test.timeout 200s) >"$OUT/kern.log" 2>&1 &
(cd engine/gpu && timeout "${LIMIT:-200}" "$bin/gpu.test" -test.v -test.count=1 -test.timeout 200s) >"$OUT/gpu.log" 2>&1 &
rc=0
wait %1 || rc=1
wait %2 || rc=1
wait %3 || rc=1
for p in cuda kern gpu; do
  echo "== $p: $(grep -c -- '--- PASS' "$OUT/$p.log") passed, $(grep -c -- '--- FAIL' "$OUT/$p.log") failed, $(grep -c -- '--- SKIP' "$OUT/$p.log") skipped"
  grep -E '^(--- FAIL|    --- FAIL|FAIL|ok|PASS|panic)' "$OUT/$p.log" | head -12
done
echo "tests: rc=$rc in $(( $(date +%s) - start ))s"
exit $rc
