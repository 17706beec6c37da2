#!/usr/bin/env bash
# scripts/device/orprune.sh — issue #20 part 4: the GPU OR's pruning by
# per-tile term maxima and the gated MaxScore phase (cuda/kernels/
# query_ortile.cu), OR top-10 queries/s of the new qp against the previous
# one (global term maxima, no gated phase) and the CPU engine on 16
# threads (MaxScore and BMW), with the GPU's pruning shares (tiles run,
# blocks and postings decoded as shares of the queries' lists, blocks
# skipped / gated / added by rank), on GCIDE and RFC pages with the first
# 10,000 TREC 2006 efficiency queries. About 4-6 minutes.
#
# Carry bin/dev as for realcli.sh (the same files; build them on the Go
# machine, repository root):
#   bash scripts/device/build.sh                    # bin/dev/qp (new)
#   (cd /work/main && CGO_ENABLED=0 go build -o /tmp/qp-base ./cmd/qp)
#   xz -T2 -c /tmp/qp-base >bin/dev/data/qp-base.xz # the previous qp
#   xz -T2 -c /tmp/qp-data/collections/gcide/docs.jsonl >bin/dev/data/gcide.jsonl.xz
#   bin/dev/qp index --in /tmp/qp-data/collections/rfc-pages/docs.jsonl --out /tmp/rfc-pages.qp \
#     --stem english --stopwords english --quiet && xz -T2 -c /tmp/rfc-pages.qp >bin/dev/data/rfc-pages.qp.xz
# (bin/dev/cuda.test and gpu.test are not needed: leave them out if the
# carry exceeds 64 MiB). Run: bash scripts/device/orprune.sh
#
# Output under $OUT: orprune.txt (one line per measurement, two rounds,
# old and new interleaved), NAME-{new,old}-rRound.txt (the full bench
# output with the GPU time split and the pruning lines), NAME-cpu.txt.
# Environment: COLLS (default "gcide rfc-pages"), ROUNDS (default 2).
source scripts/device/lib.sh
cd "$OUT" || exit 1
d=$bin/data
for f in "$d"/*.xz; do
  [ -e "$f" ] || continue
  b=$(basename "$f" .xz)
  [ -s "/tmp/$b" ] || xz -d -T4 -c "$f" >"/tmp/$b" || exit 1
done
chmod +x /tmp/qp-base 2>/dev/null
new=$bin/qp old=/tmp/qp-base
[ -x "$old" ] || { echo "no previous qp (bin/dev/data/qp-base.xz)"; exit 1; }
head -10000 "$d/06.efficiency_topics.txt" >/tmp/q06.txt
res=$OUT/orprune.txt
: >"$res"
log() { echo "$*" | tee -a "$res"; }
# qps prints the queries/s of the first row of MODE (column 4) in a bench
# output; rowqps THREADS that of the CPU row with that many threads.
qps() { awk '$1=="or"{print $4; exit}' "$1"; }
rc=0
t0=$(date +%s)
for c in ${COLLS:-gcide rfc-pages}; do
  idx=/tmp/$c.qp
  if [ ! -s "$idx" ]; then
    t=$(date +%s)
    "$new" index --in "/tmp/$c.jsonl" --out "$idx" --stem english --stopwords english --quiet >"$OUT/index-$c.log" 2>&1 || { tail -3 "$OUT/index-$c.log"; exit 1; }
    log "$c index: $(( $(date +%s) - t )) s: $(tail -1 "$OUT/index-$c.log")"
  fi
  for r in $(seq 1 "${ROUNDS:-2}"); do
    for b in old new; do
      eval bb=\$$b
      o=$OUT/$c-$b-r$r.txt
      timeout 120 "$bb" bench query "$idx" /tmp/q06.txt --limit 10000 --k 10 --device gpu --gpu-only --modes or --profile >"$o" 2>&1 || rc=1
      log "$c round$r $b: GPU OR top-10 $(qps "$o") q/s"
      grep -E 'OR tiles accumulated|OR pruning' "$o" | sed 's/^ */    /' | tee -a "$res"
    done
  done
  o=$OUT/$c-cpu.txt
  timeout 120 "$new" bench query "$idx" /tmp/q06.txt --limit 10000 --k 10 --device cpu --modes or --thread-counts 16 \
    --or-algos maxscore,bmw >"$o" 2>&1 || rc=1
  log "$c CPU 16 threads OR top-10: $(awk '$1=="or" && $3==16{printf "%s %s q/s; ", $2, $4}' "$o")"
  log "  elapsed $(( $(date +%s) - t0 )) s"
done
exit $rc
