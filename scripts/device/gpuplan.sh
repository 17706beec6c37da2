#!/usr/bin/env bash
# scripts/device/gpuplan.sh — branch gpuplan (issues 20 §4, 24, 25): OR and
# AND+OR launch sets planned and converted off the CUDA owner goroutine.
# Old (a main build, /tmp/qp-old) against new (this branch, bin/dev/qp),
# interleaved (old new, new old, ...), ROUNDS (default 2) rounds of
#   qp bench query gcide.qp F --device gpu --gpu-only --modes M --limit 100000 --profile
# for each M of MODES (default "or andor and") and F of q06 (the first
# 10,000 TREC 2006 efficiency queries: one batch of 10,000) and q10 (those
# ×10 with unique qids: one batch of 100,000). Then (TESTS=1, default) the
# tests of the branch on the GPU: gpu.test -test.run 'TestPlanned|TestOr|
# TestDifferential|TestSearchBatchConcurrent'.
#
# Build (Go machine, repository root of the branch):
#   mkdir -p bin/dev/data && cp ../shared/data/queries/06.efficiency_topics.txt bin/dev/data/
#   CGO_ENABLED=0 go build -o /tmp/qp ./cmd/qp && xz -T0 -9 -c /tmp/qp >bin/dev/data/qp.xz
#   CGO_ENABLED=0 go test -c -o /tmp/gpu.test ./engine/gpu && xz -T0 -9 -c /tmp/gpu.test >bin/dev/data/gpu.test.xz
#   rm -rf /tmp/qp-main; git -C /work/main archive main | (mkdir -p /tmp/qp-main && tar -x -C /tmp/qp-main) &&
#     (cd /tmp/qp-main && CGO_ENABLED=0 go build -o /tmp/qp-old ./cmd/qp) &&
#     xz -T0 -9 -c /tmp/qp-old >bin/dev/data/qp-old.xz
#   xz -T0 -6 -c /tmp/lead/hold/gcide.qp >bin/dev/data/gcide.qp.xz
# then, carry ["bin/dev"]:
#   bash scripts/device/gpuplan.sh
#
# Output, under $OUT:
#   gpuplan.txt     per run "round R MODE FILE VARIANT: Q q/s" and its
#                   host: line (wall = prepare + hand-off + owner [sync
#                   waits, convert, driver calls] + finish; "N of M sets
#                   planned off the owner"; owner thread CPU); per mode and
#                   file the new/old q/s ratio of each round
#   bq-V-M-F-R.txt  each run's bench query output
#   tests.txt       the gpu.test run
#   bq-V-M-q06-blocking.txt  OR and AND+OR with QP_CUDA_SYNC=blocking (owner
#                   CPU without the spinning stream waits)
# Look for: OR and AND+OR "M of M sets planned off the owner" (new; 0 of M
# old), the owner's time and owner thread CPU new against old (the target:
# owner CPU per 10k OR batch from ~6 ms to <= 1.5 ms), prepare and finish
# (where the moved work now runs, on all cores), q/s new/old > 1; AND
# unchanged; tests: PASS.
source scripts/device/lib.sh
rm -f /tmp/qp /tmp/qp-old /tmp/gpu.test
BIN=${BIN:-bin/dev} bash scripts/device/unpack.sh || exit 1
old=/tmp/qp-old new=$bin/qp
chmod +x "$old" 2>/dev/null
[ -x "$old" ] || { echo "no $old (carry bin/dev/data/qp-old.xz)"; exit 1; }
idx=${IDX:-/tmp/gcide.qp}
[ -s "$idx" ] || { echo "no $idx (carry bin/dev/data/gcide.qp.xz)"; exit 1; }
head -10000 "$bin/data/06.efficiency_topics.txt" >/tmp/q06.txt
[ -s /tmp/q10.txt ] || for r in $(seq 1 10); do sed "s/^/r$r-/" /tmp/q06.txt; done >/tmp/q10.txt
sum=$OUT/gpuplan.txt
echo "== gcide; $(nproc) cores; $(head -2 "$OUT/device.txt" | tail -1)" | tee "$sum"
echo "new: $($new version 2>&1 | head -1); old: $($old version 2>&1 | head -1)" | tee -a "$sum"

rounds=${ROUNDS:-2}
for r in $(seq "$rounds"); do
  order="old new"
  [ $((r % 2)) = 0 ] && order="new old"
  for m in ${MODES:-or andor and}; do
    for f in ${FILES:-q06 q10}; do
      for v in $order; do
        qp=$new
        [ "$v" = old ] && qp=$old
        o=$OUT/bq-$v-$m-$f-$r.txt
        timeout 300 "$qp" bench query "$idx" /tmp/$f.txt --device gpu --gpu-only --modes "$m" --limit 100000 --profile >"$o" 2>&1
        qps=$(awk -v m="$m" '$1 == m && $2 == "gpu" {print $4; exit}' "$o")
        echo "round $r $m $f $v: ${qps:-FAILED} q/s" | tee -a "$sum"
        grep -i "host:" "$o" | head -2 | sed 's/^/    /' | tee -a "$sum"
        [ -n "$qps" ] || tail -3 "$o" | tee -a "$sum"
      done
    done
  done
done
for m in ${MODES:-or andor and}; do
  for f in ${FILES:-q06 q10}; do
    awk -v m="$m" -v f="$f" '$1 == "round" && $3 == m && $4 == f && $6 ~ /^[0-9]/ { v = $5; sub(/:$/, "", v); q[$2, v] = $6; n = ($2 > n ? $2 : n) }
      END { s = ""
        for (r = 1; r <= n; r++) if (q[r, "old"] > 0 && q[r, "new"] > 0) s = s sprintf(" %.3f", q[r, "new"] / q[r, "old"])
        if (s != "") printf "ratio %s %s: q/s new/old per round:%s\n", m, f, s }' "$sum" | tee -a "$sum"
  done
done

# The owner thread's CPU without the driver's spinning stream waits (which
# count as its CPU time under the default sync mode): new and old once
# more with QP_CUDA_SYNC=blocking, OR and AND+OR on q06.
for m in or andor; do
  for v in old new; do
    qp=$new
    [ "$v" = old ] && qp=$old
    o=$OUT/bq-$v-$m-q06-blocking.txt
    QP_CUDA_SYNC=blocking timeout 300 "$qp" bench query "$idx" /tmp/q06.txt --device gpu --gpu-only --modes "$m" --limit 100000 --profile >"$o" 2>&1
    qps=$(awk -v m="$m" '$1 == m && $2 == "gpu" {print $4; exit}' "$o")
    echo "blocking $m q06 $v: ${qps:-FAILED} q/s" | tee -a "$sum"
    grep -i "host:" "$o" | head -2 | sed 's/^/    /' | tee -a "$sum"
  done
done

if [ "${TESTS:-1}" = 1 ] && [ -x "$bin/gpu.test" ]; then
  (cd engine/gpu && timeout 500 "$bin/gpu.test" -test.count=1 -test.v \
    -test.run 'TestPlanned|TestOr|TestDifferential|TestSearchBatchConcurrent' >"$OUT/tests.txt" 2>&1)
  echo "tests: exit $?; $(grep -c '^--- PASS' "$OUT/tests.txt") passed, $(grep -c '^--- FAIL' "$OUT/tests.txt") failed" | tee -a "$sum"
  grep '^--- FAIL' "$OUT/tests.txt" | head | tee -a "$sum"
fi
ls -la "$OUT"
