#!/usr/bin/env bash
# scripts/device/gpuhost5.sh — branch gpuhost5 (issues 20 §4, 24, 25): the
# GPU backend's host cost per query, old (a main build, /tmp/qp-old)
# against new (this branch, bin/dev/qp), interleaved (old new, new old,
# ...), ROUNDS (default 3) rounds of
#   qp bench query gcide.qp q06x100.txt --device gpu --gpu-only --modes M --limit 1000000
# for each M of MODES (default "and or andor") on GCIDE with the 1M-query
# set (the first 10,000 TREC 2006 efficiency queries repeated 100 times,
# unique qids rR-qid, as cliab.sh builds them), with a Go CPU profile of
# each variant and mode in round 1; each run under /usr/bin/time (or
# bash's time): the process's wall, user, sys and minor page faults (the
# first touches: bench query's warm-up batch runs on fresh buffers).
# Then (HOSTPREP=1, default) BenchmarkHostPrep's prepare (warm buffers)
# and prepare-cold (fresh buffers: a process's first batch) at 1M GCIDE
# queries, old test binary against new, 2 rounds: cpu-ns/op and
# minflt/op per 1M-query batch preparation.
#
# Build (Go machine, repository root of the branch):
#   mkdir -p bin/dev/data && cp ../shared/data/queries/06.efficiency_topics.txt bin/dev/data/
#   CGO_ENABLED=0 go build -o /tmp/qp ./cmd/qp && xz -T0 -9 -c /tmp/qp >bin/dev/data/qp.xz
#   CGO_ENABLED=0 go test -c -o /tmp/gpu.test ./engine/gpu && xz -T0 -9 -c /tmp/gpu.test >bin/dev/data/gpu.test.xz
#   rm -rf /tmp/qp-main; git -C /work/main archive main | (mkdir -p /tmp/qp-main && tar -x -C /tmp/qp-main) &&
#     cp engine/gpu/hostprep_bench_test.go /tmp/qp-main/engine/gpu/ &&
#     (cd /tmp/qp-main && CGO_ENABLED=0 go build -o /tmp/qp-old ./cmd/qp &&
#      CGO_ENABLED=0 go test -c -o /tmp/gpu-old.test ./engine/gpu) &&
#     xz -T0 -9 -c /tmp/qp-old >bin/dev/data/qp-old.xz && xz -T0 -9 -c /tmp/gpu-old.test >bin/dev/data/gpu-old.test.xz
#   xz -T0 -6 -c /tmp/lead/hold/gcide.qp >bin/dev/data/gcide.qp.xz
# then, carry ["bin/dev"]:
#   bash scripts/device/gpuhost5.sh
#
# Output, under $OUT:
#   gpuhost5.txt       per run "round R MODE VARIANT: Q q/s; time: ..."; per
#                      mode the new/old q/s ratio of each round and their
#                      mean; the HostPrep lines
#   bq-V-M-R.txt       each run's bench query output
#   prof-V-M.pprof     round 1's CPU profiles (go tool pprof /tmp/qp-old or
#                      the new binary against them; the warm-up batch is in
#                      them too)
#   hostprep-V-R.txt   the benchmark's output
# Look for: the ratios (new/old > 1 is faster); in the profiles, prepareIDs'
# flat share (the main one: ~45%, on its first stores into the preps: the
# page faults of the warm-up batch's fresh 200 MB of preps) and minflt per
# run; in hostprep, prepare-cold's cpu-ns/op and minflt/op new/old.
source scripts/device/lib.sh
rm -f /tmp/qp /tmp/qp-old /tmp/gpu.test /tmp/gpu-old.test
BIN=${BIN:-bin/dev} bash scripts/device/unpack.sh || exit 1
old=/tmp/qp-old new=$bin/qp
chmod +x "$old" /tmp/gpu-old.test 2>/dev/null
[ -x "$old" ] || { echo "no $old (carry bin/dev/data/qp-old.xz)"; exit 1; }
idx=${IDX:-/tmp/gcide.qp}
[ -s "$idx" ] || { echo "no $idx (carry bin/dev/data/gcide.qp.xz)"; exit 1; }
q=/tmp/q06x100.txt
head -10000 "$bin/data/06.efficiency_topics.txt" >/tmp/q06.txt
[ -s $q ] || for r in $(seq 1 100); do sed "s/^/r$r-/" /tmp/q06.txt; done >$q
sum=$OUT/gpuhost5.txt
echo "== gcide, 1M queries; $(nproc) cores; $(head -2 "$OUT/device.txt" | tail -1)" | tee "$sum"
echo "new: $($new version 2>&1 | head -1); old: $($old version 2>&1 | head -1)" | tee -a "$sum"

# timed CMD...: runs CMD, its process times into $OUT/time.txt.
timed() {
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%e s wall, %U s user, %S s sys, %R minflt, %M KB max RSS" -o "$OUT/time.txt" "$@"
  else
    local TIMEFORMAT="%R s wall, %U s user, %S s sys"
    { time "$@"; } 2>"$OUT/time.txt"
  fi
}

rounds=${ROUNDS:-3}
for r in $(seq "$rounds"); do
  order="old new"
  [ $((r % 2)) = 0 ] && order="new old"
  for m in ${MODES:-and or andor}; do
    for v in $order; do
      qp=$new
      [ "$v" = old ] && qp=$old
      prof=()
      [ "$r" = 1 ] && prof=(--cpuprofile "$OUT/prof-$v-$m.pprof")
      o=$OUT/bq-$v-$m-$r.txt
      timed timeout 300 "$qp" bench query "$idx" $q --device gpu --gpu-only --modes "$m" --limit "${LIMIT:-1000000}" "${prof[@]}" >"$o" 2>&1
      qps=$(awk -v m="$m" '$1 == m && $2 == "gpu" {print $4; exit}' "$o")
      echo "round $r $m $v: ${qps:-FAILED} q/s; time: $(tail -1 "$OUT/time.txt")" | tee -a "$sum"
      [ -n "$qps" ] || tail -3 "$o" | tee -a "$sum"
    done
  done
done
for m in ${MODES:-and or andor}; do
  awk -v m="$m" '$1 == "round" && $3 == m && $5 ~ /^[0-9]/ { v = $4; sub(/:$/, "", v); q[$2, v] = $5; n = ($2 > n ? $2 : n) }
    END { s = ""; t = 0; k = 0
      for (r = 1; r <= n; r++) if (q[r, "old"] > 0 && q[r, "new"] > 0) { x = q[r, "new"] / q[r, "old"]; s = s sprintf(" %.3f", x); t += x; k++ }
      if (k) printf "ratio %s: q/s new/old per round:%s; mean %.3f\n", m, s, t / k }' "$sum" | tee -a "$sum"
done

if [ "${HOSTPREP:-1}" = 1 ] && [ -x "$bin/gpu.test" ] && [ -x /tmp/gpu-old.test ]; then
  for r in 1 2; do
    for v in old new; do
      t=$bin/gpu.test
      [ "$v" = old ] && t=/tmp/gpu-old.test
      QP_HOSTPREP_N=${LIMIT:-1000000} QP_HOSTPREP_INDEX=$idx QP_HOSTPREP_QUERIES=$q timeout 300 "$t" -test.run '^$' \
        -test.bench 'HostPrep/prepare' -test.benchtime=4x >"$OUT/hostprep-$v-$r.txt" 2>&1
      grep Benchmark "$OUT/hostprep-$v-$r.txt" | sed "s/^/hostprep $v round $r: /" | tee -a "$sum"
    done
  done
fi
ls -la "$OUT"
