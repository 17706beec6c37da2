#!/usr/bin/env bash
# scripts/device/orprune.sh — issue #20 part 4: the GPU OR's device work on
# real text, a new qp against a previous one (OR top-10, `qp bench query
# --device gpu --gpu-only --modes or --profile`, the first 10,000 TREC 2006
# efficiency queries x REPS), old and new interleaved for ROUNDS rounds,
# then the CPU engine on 16 threads (MaxScore and BMW) once. It prints per
# run the q/s, the GPU time split (wall, score, top-k, transfer) and the
# work lines (OR tiles accumulated, blocks decoded, documents completed
# from device bitmaps; OR queries answered whole and their blocks). Used
# first by the branch `gpuor` (per-tile maxima, reverted), then `gpuor2`
# (OR queries of few postings answered whole, engine/gpu/orwhole.go).
# About 1 minute per collection and round.
#
# Carry bin/dev (build on the Go machine, repository root):
#   bash scripts/device/build.sh && rm -f bin/dev/*.test   # bin/dev/qp (new)
#   (cd /work/main && CGO_ENABLED=0 go build -o /tmp/qp-base ./cmd/qp)
#   xz -T2 -c /tmp/qp-base >bin/dev/data/qp-base.xz       # the previous qp
#   cp /tmp/lead/hold/gcide.qp.xz bin/dev/data/             # GCIDE (qp index --stem english --stopwords english)
#   cp /tmp/lead/hold/rfc-pages.qp.xz bin/dev/data/         # optional: RFC pages (29.6 MB; with it the
#                                                           # carry needs bin/dev/qp as qp.xz: xz -T2 bin/dev/qp)
# Run: bash scripts/device/orprune.sh
#
# Output under $OUT: orprune.txt (one line per measurement, then its split
# and work lines), NAME-{old,new}-rROUND.txt (the full bench outputs),
# NAME-cpu.txt. Environment: COLLS (default "gcide rfc-pages"; a
# collection without NAME.qp.xz or NAME.jsonl.xz in bin/dev/data is
# skipped), ROUNDS (default 3), NQ (default 10000: the first NQ queries),
# REPS (default 10: the queries repeated, 100,000 in all), K (default 10).
source scripts/device/lib.sh
d=$bin/data
[ -x "$bin/qp" ] || { [ -s "$bin/qp.xz" ] && xz -d -T4 -c "$bin/qp.xz" >/tmp/qp-new && chmod +x /tmp/qp-new; }
new=$bin/qp
[ -x "$new" ] || new=/tmp/qp-new
for f in "$d"/*.xz; do
  [ -e "$f" ] || continue
  b=$(basename "$f" .xz)
  # (the previous qp always: a warm machine may hold another one)
  if [ "$b" = qp-base ] || [ ! -s "/tmp/$b" ]; then xz -d -T4 -c "$f" >"/tmp/$b" || exit 1; fi
done
chmod +x /tmp/qp-base 2>/dev/null
old=/tmp/qp-base
[ -x "$old" ] || { echo "no previous qp (bin/dev/data/qp-base.xz)"; exit 1; }
[ -x "$new" ] || { echo "no new qp (bin/dev/qp or bin/dev/qp.xz)"; exit 1; }
head -"${NQ:-10000}" "$d/06.efficiency_topics.txt" >/tmp/q06.txt
: >/tmp/q06x.txt
for i in $(seq 1 "${REPS:-10}"); do sed "s/^/r$i-/" /tmp/q06.txt >>/tmp/q06x.txt; done
nq=$(wc -l </tmp/q06x.txt)
cd "$OUT" || exit 1
res=$OUT/orprune.txt
: >"$res"
log() { echo "$*" | tee -a "$res"; }
# qps prints the queries/s of the first OR row of a bench output; split
# its GPU time split row; work its tile and whole-query lines.
qps() { awk '$1=="or"{print $4; exit}' "$1"; }
split() { awk '/GPU time split/{f=1; next} f && $1=="or"{print "wall " $5 " ms, score " $8 ", top-k " $9 ", transfer " $10; exit}' "$1"; }
work() { grep -E 'OR tiles accumulated|OR queries answered whole' "$1" | sed 's/^ */    /'; }
rc=0
t0=$(date +%s)
for c in ${COLLS:-gcide rfc-pages}; do
  idx=/tmp/$c.qp
  if [ ! -s "$idx" ] && [ -s "/tmp/$c.jsonl" ]; then
    t=$(date +%s)
    "$new" index --in "/tmp/$c.jsonl" --out "$idx" --stem english --stopwords english --quiet >"$OUT/index-$c.log" 2>&1 ||
      { tail -3 "$OUT/index-$c.log"; exit 1; }
    log "$c index: $(( $(date +%s) - t )) s: $(tail -1 "$OUT/index-$c.log")"
  fi
  [ -s "$idx" ] || { log "$c: no index (bin/dev/data/$c.qp.xz or $c.jsonl.xz), skipped"; continue; }
  for r in $(seq 1 "${ROUNDS:-3}"); do
    for b in old new; do
      eval bb=\$$b
      o=$OUT/$c-$b-r$r.txt
      timeout 180 "$bb" bench query "$idx" /tmp/q06x.txt --limit "$nq" --k "${K:-10}" --device gpu --gpu-only --modes or \
        --profile >"$o" 2>&1 || rc=1
      log "$c round$r $b: GPU OR top-${K:-10} $(qps "$o") q/s; $(split "$o")"
      work "$o" | tee -a "$res"
    done
  done
  o=$OUT/$c-cpu.txt
  timeout 180 "$new" bench query "$idx" /tmp/q06x.txt --limit "$nq" --k "${K:-10}" --device cpu --modes or --thread-counts 16 \
    --or-algos maxscore,bmw >"$o" 2>&1 || rc=1
  log "$c CPU 16 threads OR top-${K:-10}: $(awk '$1=="or" && $3==16{printf "%s %s q/s; ", $2, $4}' "$o")"
  log "  elapsed $(( $(date +%s) - t0 )) s"
done
exit $rc
