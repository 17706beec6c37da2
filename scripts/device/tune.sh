#!/usr/bin/env bash
# scripts/device/tune.sh — kernels measured side by side (issues #3 and #4),
# after the tests that check them:
#  1. tests: the cuda decoder tests (widths, random lists, kernel
#     attributes) and the engine/gpu OR and differential tests;
#  2. decode: TestDecodeSweep of $DECODE_KERNELS (names as in
#     BenchmarkDecode; default bp128, pfordelta, eliasfano) at $LENGTHS
#     (default 2^14, 2^20, 2^24, 2^26), twice (the spread between the two
#     is the noise): scripts/device/ab.sh with this build alone ->
#     NAME-1.csv, NAME-2.csv (NAME: the folder of the binaries, dev);
#  3. or: scripts/device/q10m.sh (MODES default or, without the Go
#     benchmarks) with every OR threshold of $ORTH (default 1G,256M,64M),
#     $REPS times (default 1; the spread is the noise), into $OUT/or-N;
#  4. profile: scripts/device/profile.sh's OR profile of the fused tile
#     kernel (PROFILES=or).
# PARTS (default "tests decode or") selects; BUDGET (seconds, 540).
# Build first: scripts/device/build.sh.
. scripts/device/lib.sh
t0=$(date +%s)
left() { echo $(( ${BUDGET:-540} - ($(date +%s) - t0) )); }
rc=0
for part in ${PARTS:-tests decode or}; do
  start=$(date +%s)
  case $part in
  tests)
    timeout 150 "$bin/kern.test" -test.run 'TestDecode(Widths|Random)|TestKernelAttrs' -test.count=1 >"$OUT/cuda-tests.log" 2>&1 || rc=1
    grep -E '^(--- FAIL|FAIL|ok|PASS)' "$OUT/cuda-tests.log" | tail -5
    timeout 200 "$bin/gpu.test" -test.run 'TestOr|TestDifferential|TestGen' -test.count=1 -test.v >"$OUT/gpu-tests.log" 2>&1 || rc=1
    grep -E '^(--- FAIL|FAIL|ok|PASS)' "$OUT/gpu-tests.log" | tail -8
    echo "== tests: $(grep -c -- '--- PASS' "$OUT/gpu-tests.log") engine/gpu passes, $(grep -c -- '--- FAIL' "$OUT/gpu-tests.log") fails in $(( $(date +%s) - start ))s" ;;
  decode)
    BINS=$(basename "$bin") K=${DECODE_KERNELS:-bp128,pfordelta,eliasfano} TIMEOUT=$(( $(left) / 2 )) OUT="$OUT" \
      bash scripts/device/ab.sh || rc=1
    echo "== decode: in $(( $(date +%s) - start ))s" ;;
  profile)
    PROFILES=or OUT="$OUT" bash scripts/device/profile.sh 2>&1 | tail -25 ;;
  or)
    # q10m.sh's run (OR thresholds $ORTH), once per repetition.
    for rep in $(seq "${REPS:-1}"); do
      [ "$(left)" -lt 60 ] && { echo "or rep $rep: skipped"; continue; }
      mkdir -p "$OUT/or-$rep"
      OUT="$OUT/or-$rep" MODES=${MODES:-or} ORTH=${ORTH:-1G,256M,64M} GOBENCH=0 BUDGET=$(left) \
        bash scripts/device/q10m.sh || rc=1
    done ;;
  esac
done
echo "total $(( $(date +%s) - t0 ))s"
exit $rc
