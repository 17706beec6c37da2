#!/usr/bin/env bash
# scripts/device/mmap.sh — issue #21: index.Open memory-mapped (this build)
# against read into the heap (BASE), on the 10M-document gen index.
# Build first: scripts/device/build.sh && scripts/device/mmap-build.sh; carry bin/dev.
# 1. Open, 3 rounds, base and new alternating: open seconds, RssAnon and
#    RssFile (MiB) after Open, seconds of a pass over every list (openbench).
# 2. Two new processes open the index at once: their RssFile pages are the
#    page cache's (shared), their RssAnon small.
# 3. qp bench query, base and new alternating, twice: q/s of AND skip, OR
#    maxscore on 16 threads and the GPU rows (10,000 TREC 2006 queries).
# Output: $OUT/mmap.txt (one line per measurement), $OUT/gen.log. About
# 4-7 minutes with a warm /tmp/g10m.qp, +3 minutes to generate it.
source scripts/device/lib.sh
d=$bin/data
for b in qp-base openbench-base; do
  [ -s "/tmp/$b" ] || xz -d -c "$d/$b.xz" >"/tmp/$b" || exit 1
  chmod +x "/tmp/$b"
done
gen10m || exit 1
res=$OUT/mmap.txt
: >"$res"
log() { echo "$*" | tee -a "$res"; }
log "index: $(ls -l /tmp/g10m.qp | awk '{print $5}') bytes; $(nproc) cores"
for round in 1 2 3; do
  log "open round$round base: $(/tmp/openbench-base /tmp/g10m.qp | cut -f2-)"
  log "open round$round new:  $("$bin/openbench" /tmp/g10m.qp | cut -f2-)"
done
"$bin/openbench" /tmp/g10m.qp >"$OUT/two-a.txt" & "$bin/openbench" /tmp/g10m.qp >"$OUT/two-b.txt"; wait
log "two processes at once: $(cut -f2- "$OUT/two-a.txt") | $(cut -f2- "$OUT/two-b.txt")"
head -10000 "$d/06.efficiency_topics.txt" >/tmp/q06.txt
for round in 1 2; do
  for b in base new; do
    q=/tmp/qp-base; [ $b = new ] && q=$bin/qp
    timeout 150 "$q" bench query /tmp/g10m.qp /tmp/q06.txt --limit 10000 --device gpu --thread-counts 16 \
      --and-algos skip --or-algos maxscore --modes and,or >"$OUT/bq-$b-$round.txt" 2>&1
    log "bench query round$round $b: $(awk '$1=="and"||$1=="or"{printf "%s %s %s: %s q/s; ", $1, $2, $3, $4}' "$OUT/bq-$b-$round.txt")"
  done
done
