#!/usr/bin/env bash
# scripts/device/gpuplan.sh — branches gpuplan, gpuplan2 and gpuplan3 (issues
# 20 §4, 24, 25): OR and AND+OR launch sets planned off the CUDA owner
# goroutine, and (gpuplan3) that plan's cost: one pass over the preps on all
# cores, in the batch's order, and one planner for every OR launch.
# Old (a main build, /tmp/qp-old) against new (this branch, bin/dev/qp),
# interleaved (old new, new old, ...), ROUNDS (default 2) rounds of
#   qp bench query gcide.qp F --device gpu --gpu-only --modes M --limit 100000 --profile
# for each M of MODES (default "or andor and") and F of q06 (the first
# 10,000 TREC 2006 efficiency queries: one batch of 10,000) and q10 (those
# ×10 with unique qids: one batch of 100,000). Then (PREP=1, default, when
# both test binaries came) BenchmarkHostPrep/planbatch, old test binary
# against new, interleaved, PREP_ROUNDS (default 3) rounds, for OR and
# AND+OR at 10,000 and 100,000 queries (GCIDE, TREC'06; -test.cpu 16).
# Then (TESTS=1, default) the tests of the branch on the GPU: gpu.test
# -test.run 'TestPlanned|TestOr|TestDifferential|TestSearchBatchConcurrent|
# TestPrepare|TestPlanBatch'. A step starts only while less than BUDGET
# seconds (default 420) have passed.
#
# Build (Go machine, repository root of the branch; B is a folder of the
# builder's own):
#   B=/tmp/gpuplan-build; rm -rf $B; mkdir -p $B bin/dev/data
#   cp ../shared/data/queries/06.efficiency_topics.txt bin/dev/data/
#   CGO_ENABLED=0 go build -o $B/qp ./cmd/qp && xz -T0 -9 -c $B/qp >bin/dev/data/qp.xz
#   CGO_ENABLED=0 go test -c -o $B/gpu.test ./engine/gpu && xz -T0 -9 -c $B/gpu.test >bin/dev/data/gpu.test.xz
#   git -C /work/main archive main | (mkdir -p $B/main && tar -x -C $B/main) &&
#     (cd $B/main && CGO_ENABLED=0 go build -o $B/qp-old ./cmd/qp &&
#      CGO_ENABLED=0 go test -c -o $B/gpu-old.test ./engine/gpu) &&
#     xz -T0 -9 -c $B/qp-old >bin/dev/data/qp-old.xz && xz -T0 -9 -c $B/gpu-old.test >bin/dev/data/gpu-old.test.xz
#   xz -T0 -6 -c /tmp/lead/hold/gcide.qp >bin/dev/data/gcide.qp.xz
# then, carry ["bin/dev"]:
#   bash scripts/device/gpuplan.sh
#
# Output, under $OUT (the device tool returns at most 8 files: the runs'
# own files are packed into all.tgz):
#   gpuplan.txt     per run "round R MODE FILE VARIANT: Q q/s" and its
#                   host: line (wall = prepare (plan) + hand-off + owner
#                   [sync waits, convert, driver calls] + finish; "N of M
#                   sets planned off the owner"; owner thread CPU); per
#                   mode and file the new/old q/s ratio of each round;
#                   "prep MODE N VARIANT R:" BenchmarkHostPrep/planbatch's
#                   ns/op (wall) and cpu-ns/op, and per MODE and N the
#                   new/old ratios of both; the tests' count
#   all.tgz         bq-V-M-F-R.txt (each run's bench query output),
#                   bq-V-M-q06-blocking.txt (OR and AND+OR with
#                   QP_CUDA_SYNC=blocking: the owner's CPU without the
#                   spinning stream waits), prep-*.txt, tests.txt
# Look for (gpuplan3): the host: line's "(plan Y)" and prepare, new against
# old, per 10k and 100k OR and AND+OR batch (H100, main with gpuplan2:
# plan 1.7-2.3 ms per 10k OR batch, 21 ms per 100k), planbatch wall and
# CPU new/old < 1, owner time of AND+OR (its OR part now planned by the
# same one-pass planner, its needOr and OR filter passes on all cores) below
# old, finish (result offsets now on all cores) not above old, q/s new/old
# >= 1; AND unchanged; tests: PASS.
source scripts/device/lib.sh
rm -f /tmp/qp /tmp/qp-old /tmp/gpu.test /tmp/gpu-old.test
t0=$(date +%s)
budget=${BUDGET:-420}
BIN=${BIN:-bin/dev} bash scripts/device/unpack.sh || exit 1
old=/tmp/qp-old new=$bin/qp
chmod +x "$old" 2>/dev/null
[ -x "$old" ] || { echo "no $old (carry bin/dev/data/qp-old.xz)"; exit 1; }
idx=${IDX:-/tmp/gcide.qp}
[ -s "$idx" ] || { echo "no $idx (carry bin/dev/data/gcide.qp.xz)"; exit 1; }
head -10000 "$bin/data/06.efficiency_topics.txt" >/tmp/q06.txt
[ -s /tmp/q10.txt ] || for r in $(seq 1 10); do sed "s/^/r$r-/" /tmp/q06.txt; done >/tmp/q10.txt
sum=$OUT/gpuplan.txt
runs=/tmp/gpuplan-runs
rm -rf "$runs" && mkdir -p "$runs"
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
        [ $(($(date +%s) - t0)) -lt "$budget" ] || { echo "round $r $m $f $v: skipped (budget)" | tee -a "$sum"; continue; }
        o=$runs/bq-$v-$m-$f-$r.txt
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
    o=$runs/bq-$v-$m-q06-blocking.txt
    QP_CUDA_SYNC=blocking timeout 300 "$qp" bench query "$idx" /tmp/q06.txt --device gpu --gpu-only --modes "$m" --limit 100000 --profile >"$o" 2>&1
    qps=$(awk -v m="$m" '$1 == m && $2 == "gpu" {print $4; exit}' "$o")
    echo "blocking $m q06 $v: ${qps:-FAILED} q/s" | tee -a "$sum"
    grep -i "host:" "$o" | head -2 | sed 's/^/    /' | tee -a "$sum"
  done
done

# BenchmarkHostPrep/planbatch (planBatch alone: the launch sets, the AND and
# OR plans and their filled uploads), the old test binary against the new.
if [ "${PREP:-1}" = 1 ] && [ -s /tmp/gpu-old.test ] && [ -x "$bin/gpu.test" ]; then
  chmod +x /tmp/gpu-old.test
  for r in $(seq "${PREP_ROUNDS:-3}"); do
    order="old new"
    [ $((r % 2)) = 0 ] && order="new old"
    for m in or andor; do
      for n in 10000 100000; do
        for v in $order; do
          [ $(($(date +%s) - t0)) -lt "$budget" ] || { echo "prep $m $n $v $r: skipped (budget)" | tee -a "$sum"; continue; }
          t=$bin/gpu.test
          [ "$v" = old ] && t=/tmp/gpu-old.test
          o=$runs/prep-$v-$m-$n-$r.txt
          (cd engine/gpu && QP_HOSTPREP_INDEX=$idx QP_HOSTPREP_QUERIES=$bin/data/06.efficiency_topics.txt \
            QP_HOSTPREP_MODE=$m QP_HOSTPREP_N=$n timeout 120 "$t" -test.run XXX -test.bench 'HostPrep/planbatch' \
            -test.benchtime $((20000000 / n))x -test.cpu 16 >"$o" 2>&1)
          echo "prep $m $n $v $r: $(awk '/planbatch/ {print $3, "ns/op", $5, "cpu-ns/op"; exit}' "$o")" | tee -a "$sum"
        done
      done
    done
  done
  for m in or andor; do
    for n in 10000 100000; do
      awk -v m="$m" -v n="$n" '$1 == "prep" && $2 == m && $3 == n && $6 ~ /^[0-9]/ { r = $5; sub(/:$/, "", r); w[r, $4] = $6; c[r, $4] = $8; k = (r > k ? r : k) }
        END { s = ""
          for (r = 1; r <= k; r++) if (w[r, "old"] > 0 && w[r, "new"] > 0) s = s sprintf(" %.3f/%.3f", w[r, "new"] / w[r, "old"], c[r, "new"] / c[r, "old"])
          if (s != "") printf "ratio prep %s %d: planbatch new/old wall/cpu per round:%s\n", m, n, s }' "$sum" | tee -a "$sum"
    done
  done
fi

if [ "${TESTS:-1}" = 1 ] && [ -x "$bin/gpu.test" ] && [ $(($(date +%s) - t0)) -lt "$budget" ]; then
  (cd engine/gpu && timeout $((500 - ($(date +%s) - t0))) "$bin/gpu.test" -test.count=1 -test.v \
    -test.run 'TestPlanned|TestOr|TestDifferential|TestSearchBatchConcurrent|TestPrepare|TestPlanBatch' >"$runs/tests.txt" 2>&1)
  echo "tests: exit $?; $(grep -c '^--- PASS' "$runs/tests.txt") passed, $(grep -c '^--- FAIL' "$runs/tests.txt") failed" | tee -a "$sum"
  grep '^--- FAIL' "$runs/tests.txt" | head | tee -a "$sum"
fi
tar czf "$OUT/all.tgz" -C "$runs" .
ls -la "$OUT"
