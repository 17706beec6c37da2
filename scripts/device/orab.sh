#!/usr/bin/env bash
# scripts/device/orab.sh — the GPU OR of this build (bin/dev/qp) against
# the same tree without the per-tile term maxima and gated phase
# (bin/dev/data/qp-ng.xz: main with the files of the tiled OR as before
# that merge), OR top-10 on the GPU only, 10,000 TREC 2006 queries, ROUNDS
# (default 2) rounds interleaved, on GCIDE and RFC pages (carried as
# gcide.qp.xz, rfc-pages.qp.xz) and a 10M-document independent-model gen
# index built here (06 log terms). TESTS=1 (default) first runs every GPU
# test (scripts/device/tests.sh). Output: $OUT/orab.txt and the bench logs.
source scripts/device/lib.sh
chmod +x /tmp/qp-ng
if [ "${TESTS:-1}" = 1 ]; then LIMIT=${LIMIT:-220} bash scripts/device/tests.sh; fi
t=$(date +%s)
[ -s /tmp/g10m.qp ] || timeout 150 "$bin/qp" gen --model independent --docs 10000000 --out /tmp/g10m.qp --quiet \
  --queries "$bin/data/06.efficiency_topics.txt" >"$OUT/gen.log" 2>&1 || { echo "gen failed"; tail -3 "$OUT/gen.log"; exit 1; }
echo "gen10m: $(( $(date +%s) - t ))s"
head -10000 "$bin/data/06.efficiency_topics.txt" >/tmp/q06.txt
res=$OUT/orab.txt
for c in ${COLLS:-gcide rfc-pages g10m}; do
  [ -s /tmp/$c.qp ] || { echo "no /tmp/$c.qp"; continue; }
  for r in $(seq "${ROUNDS:-2}"); do
    for v in new ng; do
      b=$bin/qp; [ $v = ng ] && b=/tmp/qp-ng
      timeout 100 "$b" bench query /tmp/$c.qp /tmp/q06.txt --device gpu --gpu-only --modes or --profile >"$OUT/$c-$v-$r.txt" 2>&1
      echo "$c r$r $v: rc=$? $(awk '$1=="or" && $2=="gpu"{print $4" q/s, p99 "$8" ms"}' "$OUT/$c-$v-$r.txt") $(grep -o 'postings decoded [0-9.]*%' "$OUT/$c-$v-$r.txt")" | tee -a "$res"
    done
  done
done
