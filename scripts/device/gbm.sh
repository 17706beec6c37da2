#!/usr/bin/env bash
# scripts/device/gbm.sh — branch gbm (issues 20 §4, 25): the GPU AND with
# more device bitmaps. At 10M documents the former default 2 GiB budget held
# the 1,479 densest lists, about half of those of density >= 2^-7 (3,253; 591 of
# them at 25M), so the bitmap density (--gpu-bitmaps) changed nothing below
# 2^-6 in earlier sweeps; bench/bmand counts 46% fewer list-step lookups
# with every 2^-7 list a bitmap and 68% fewer with every 2^-8 list
# (docs/GPU-QUERY.md "Bitmap AND of all-dense queries: the potential").
# One binary (bin/dev/qp of this branch), rows interleaved A B C A B C:
# `qp bench query` on a topic-model gen index of DOCS documents (default
# 10M: /tmp/g10m-topics.qp, built here once by lib.sh's gen10m_topics, ~3
# min, REGEN=1 rebuilds it; DOCS=25000000 uses /tmp/g25m.qp of gen25m.sh),
# first 10,000 TREC 2006 queries, top-10, GPU
# only, MODES (default and,andor), --profile, for each ROW of ROWS (default
# "2G:1/128 12G:1/128 12G:1/256 12G:1/256:bmand", budget:density[:bmand];
# 2G:1/128 is the former default (12G:1/128 the new one); bmand adds --gpu-bitmap-and: the queries
# whose every list has a bitmap run the word-wise AND of their bitmaps). Every row's results are checked identical to the first row of
# its mode by bench query within a run; across runs the results/query
# column must agree.
# Build here: bash scripts/device/build.sh (bin/dev, 52 MB; carried as is, or
# xz-compressed in bin/dev/data: without bin/dev/qp this script runs
# scripts/device/unpack.sh first). On the device: bash scripts/device/gbm.sh
# (ROUNDS=1 in the first call, which also builds the index; later calls
# reuse it).
# Output: $OUT/gbm-tests.log (the GPU tests of the bitmap paths, with
# bin/dev/gpu.test), $OUT/gbm-ROW-R.log per run, a summary on stdout: per run the
# device bitmaps line ("gpu: N device bitmaps (X GiB)"), the AND/AND+OR
# rows (q/s, p50/p99 batch latency) and the profile's time split (wall,
# decode, intersect, score, top-k per 10,000 queries).
source scripts/device/lib.sh
[ -x "$bin/qp" ] || bash scripts/device/unpack.sh
[ -x "$bin/qp" ] || { echo "no $bin/qp (carry bin/dev: scripts/device/build.sh)"; exit 1; }
DOCS=${DOCS:-10000000}
if [ "$DOCS" = 25000000 ]; then
  idx=/tmp/g25m.qp
  if [ ! -s $idx ] || [ "${REGEN:-0}" = 1 ]; then GENLIMIT=${GENLIMIT:-360} bash scripts/device/gen25m.sh >"$OUT/gen-summary.txt" 2>&1; fi
else
  idx=/tmp/g10m-topics.qp
  gen10m_topics || exit 1
fi
[ -s $idx ] || { echo "no index $idx"; exit 1; }
# The GPU tests of the bitmap paths first (TESTS=0 skips them; ~1 min).
if [ "${TESTS:-1}" != 0 ] && [ -x "$bin/gpu.test" ]; then
  (cd engine/gpu && timeout 240 "$bin/gpu.test" -test.count=1 \
    -test.run '^(TestBitmapAnd|TestAndBitmaps|TestAndBitmapsCorrupt|TestBitmapBudget|TestBitmapLists|TestPlannedAnd)$' \
    >"$OUT/gbm-tests.log" 2>&1)
  echo "gpu.test bitmap tests: rc=$? ($(grep -c '^--- FAIL' "$OUT/gbm-tests.log") failed; $OUT/gbm-tests.log)"
  tail -2 "$OUT/gbm-tests.log"
fi
head -10000 "$bin/data/06.efficiency_topics.txt" >/tmp/q06.txt
t0=$(date +%s)
for r in $(seq 1 "${ROUNDS:-2}"); do
  for row in ${ROWS:-2G:1/128 12G:1/128 12G:1/256 12G:1/256:bmand}; do
    IFS=: read -r bytes dens bm <<<"$row"
    extra=(--gpu-bitmap-and=off); [ "${bm:-}" = bmand ] && extra=(--gpu-bitmap-and=on)
    left=$(( ${BUDGET:-560} - ($(date +%s) - t0) ))
    [ $left -gt 30 ] || { echo "== stopping: ${left}s left"; break 2; }
    log=$OUT/gbm-${bytes}-${dens//\//_}${bm:+-$bm}-$r.log
    timeout $(( left < ${RUNLIMIT:-120} ? left : ${RUNLIMIT:-120} )) "$bin/qp" bench query $idx /tmp/q06.txt --device gpu --gpu-only \
      --profile --modes "${MODES:-and,andor}" --gpu-bitmap-bytes "$bytes" --gpu-bitmaps "$dens" "${extra[@]}" >"$log" 2>&1
    echo "== $bytes $dens ${bm:-} round $r (rc $?, $(( $(date +%s) - t0 ))s)"
    grep -E '^(gpu: |mode |and |andor |GPU time split)' "$log"
  done
done
