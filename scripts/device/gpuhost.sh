#!/usr/bin/env bash
# scripts/device/gpuhost.sh — issues 20, 24, 25: the host cost of a GPU
# query batch, old binary against new (branch gpuhost: the owner check by
# goroutine instead of gettid, the hot driver calls by purego.SyscallN,
# planAnd/fillQueries on all cores with counting sorts; branch gpuhost2:
# pure-AND sets planned, filled and converted off the CUDA owner goroutine,
# one upload and one download copy per AND set, no second stream wait;
# docs/GPU-QUERY.md "Host cost of a batch").
#
# Carry bin/dev (scripts/device/build.sh, or only bin/dev/qp) with, in
# bin/dev/data:
#   qp-old.xz                 the binary to compare with (a build of main)
#   gcide.qp.xz               the GCIDE index (qp index --stem english
#                             --stopwords english, docs/CPU-ENGINE.md)
#   06.efficiency_topics.txt  the TREC 2006 efficiency log
#
# For ROUNDS rounds (default 3), old then new, for each mode of MODES
# (default "and or"):
#   diag  `qp bench sched --diagnose 0` (the GPU's batches back to back, no
#         CPU workers; batches of c = 1M postings for AND, 8M for OR: about
#         4,500 and 2,250 TREC'06 queries on GCIDE), --diagnose-for DIAG
#         (default 2s): the K=0 line's GPU q/s and the batch split line;
#         round 1 of new also writes a CPU profile ($OUT/diag-MODE.pb)
#   bench `qp bench query --gpu-only` on the first 10,000 TREC'06 queries
#         (default thresholds): the GPU row's q/s
#   prep  with bin/dev/gpu.test (build.sh) and bin/dev/data/gpu-old.test.xz
#         (main's engine/gpu tests, with BenchmarkHostPrep/batch added for
#         gpuhost2's owner rows: on a main checkout, `git apply
#         scripts/device/gpuhost-old-batch.patch`, then `CGO_ENABLED=0 go
#         test -c -o gpu-old.test ./engine/gpu` and xz it): BenchmarkHostPrep on GCIDE's first 4,500
#         TREC'06 queries (QP_HOSTPREP_INDEX), old and new interleaved:
#         prepareBatch ("prepare") and planAnd + upload ("plan") wall and CPU
#         per batch; "batch", a whole SearchBatch: the owner closure's wall
#         time (owner-ns/op) and driver calls per batch; "planbatch" (new
#         only): the plan made off the owner
# Output: $OUT/gpuhost.txt, one line per run, then per mode and measure
# the medians and a ratio line "ratio MODE MEASURE new/old = R" (target:
# bench q/s >= 1.5 on GCIDE), and last the AND batch split of the last
# round's --diagnose, old and new ("split and VER: gpu: ..."); $OUT/diag-VER-MODE-ROUND.txt and
# $OUT/bench-VER-MODE-ROUND.txt, the whole outputs. About 20 s a run.
. scripts/device/lib.sh
BIN=${BIN:-bin/dev} bash scripts/device/unpack.sh
old=/tmp/qp-old new=$bin/qp idx=/tmp/gcide.qp
[ -s "$old" ] && chmod +x "$old" || { echo "no /tmp/qp-old (carry bin/dev/data/qp-old.xz)"; exit 1; }
[ -s "$idx" ] || { echo "no $idx (carry bin/dev/data/gcide.qp.xz)"; exit 1; }
q=$bin/data/06.efficiency_topics.txt
head -10000 "$q" >/tmp/q06-10k.txt
res=$OUT/gpuhost.txt
: >"$res"
for r in $(seq 1 "${ROUNDS:-3}"); do
  for v in old new; do
    b=$new; [ $v = old ] && b=$old
    for mode in ${MODES:-and or}; do
      prof=""; [ $v = new ] && [ "$r" = 1 ] && prof="--cpuprofile $OUT/diag-$mode.pb"
      f=$OUT/diag-$v-$mode-$r.txt
      timeout 150 "$b" bench sched "$idx" "$q" --mode "$mode" --diagnose 0 --diagnose-for "${DIAG:-2s}" $prof >"$f" 2>&1
      rc=$?
      qps=$(sed -n 's/^K=0 cpu workers:.* gpu \([0-9]*\) q\/s.*/\1/p' "$f" | head -1)
      echo "run $r $v $mode diag rc=$rc gpu_qps=${qps:-NA}" | tee -a "$res"
      grep -E '^  gpu: ' "$f" | head -1 | tee -a "$res"
      f=$OUT/bench-$v-$mode-$r.txt
      timeout 150 "$b" bench query "$idx" /tmp/q06-10k.txt --device gpu --gpu-only --modes "$mode" >"$f" 2>&1
      rc=$?
      qps=$(awk -v m="$mode" '$1 == m && $4 ~ /^[0-9]+$/ { print $4; exit }' "$f")
      echo "run $r $v $mode bench rc=$rc gpu_qps=${qps:-NA}" | tee -a "$res"
    done
  done
done
# The host preparation alone, by the two test binaries.
if [ -x "$bin/gpu.test" ] && [ -s /tmp/gpu-old.test ]; then
  chmod +x /tmp/gpu-old.test
  for r in $(seq 1 "${ROUNDS:-3}"); do
    for v in old new; do
      t=$bin/gpu.test; [ $v = old ] && t=/tmp/gpu-old.test
      QP_HOSTPREP_INDEX=$idx QP_HOSTPREP_QUERIES=$q timeout 120 "$t" -test.run XXX -test.bench HostPrep \
        -test.benchtime 200x 2>&1 | awk -v r="$r" -v v="$v" '/^BenchmarkHostPrep/ { $2 = ""; print "prep", r, v, $0 }' |
        tee -a "$res"
    done
  done
  # Minimum over rounds of a sub-benchmark's metric (the value before UNIT).
  pmin() { grep "^prep [0-9]* $1 BenchmarkHostPrep/$2-" "$res" |
    awk -v u="$3" '{ for (i = 5; i <= NF; i++) if ($i == u) print $(i - 1) }' | sort -g | head -1; }
  for sub in prepare plan; do
    awk -v o="$(pmin old $sub ns/op)" -v n="$(pmin new $sub ns/op)" -v s="$sub" \
      'BEGIN { if (o > 0 && n > 0) printf "ratio hostprep %s old/new (min wall) = %.2f\n", s, o / n }' | tee -a "$res"
  done
  # gpuhost2: the owner's closure per whole AND batch (4,500 queries, one
  # set), old against new, and the new goroutine-side plan (planbatch).
  awk -v o="$(pmin old batch owner-ns/op)" -v n="$(pmin new batch owner-ns/op)" \
    'BEGIN { if (o > 0 && n > 0) printf "ratio hostprep batch owner old/new (min) = %.2f (%.0f -> %.0f ns)\n", o / n, o, n }' | tee -a "$res"
  awk -v o="$(pmin old batch calls/op)" -v n="$(pmin new batch calls/op)" \
    'BEGIN { if (o > 0 && n > 0) printf "hostprep batch driver calls: old %.0f new %.0f\n", o, n }' | tee -a "$res"
  echo "hostprep planbatch (new, off the owner) min wall $(pmin new planbatch ns/op) ns" | tee -a "$res"
fi
# Medians and ratios.
for mode in ${MODES:-and or}; do
  for m in diag bench; do
    med() { grep "^run [0-9]* $1 $mode $m " "$res" | sed 's/.*gpu_qps=//' | grep -E '^[0-9]+$' | sort -n |
      awk '{ a[NR] = $1 } END { if (NR == 0) print "NA"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
    o=$(med old) n=$(med new)
    echo "median $mode $m: old $o new $n q/s" | tee -a "$res"
    awk -v o="$o" -v n="$n" -v mode="$mode" -v m="$m" 'BEGIN { if (o > 0 && n > 0) printf "ratio %s %s new/old = %.2f\n", mode, m, n / o; else printf "ratio %s %s new/old = NA\n", mode, m }' | tee -a "$res"
  done
done
# The AND batch split (--diagnose) of the last round, old then new.
for v in old new; do
  f=$OUT/diag-$v-and-${ROUNDS:-3}.txt
  [ -s "$f" ] && echo "split and $v: $(grep -E '^  gpu: ' "$f" | head -1 | sed 's/^  //')" | tee -a "$res"
done
