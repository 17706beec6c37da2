#!/usr/bin/env bash
# scripts/device/realcli.sh — issue #20 part 4 (and #23's batch path): real
# collections through the user-facing `qp query` against the engine's own
# `qp bench query`, GPU and all CPU cores, the new binary against the old.
#
# Carry bin/dev (scripts/device/build.sh) with, in bin/dev/data:
#   NAME.jsonl.xz   collections to index there (xz; e.g. gcide), or
#   NAME.qp.xz      indexes built here (when the JSONL would not travel:
#                    rfc-pages' JSONL is 402 MB), and
#   qp-base          the previous qp (BASE, default bin/dev/data/qp-base.xz)
#   NAME.queries.tsv further query sets (known-item, generated: qp queries).
# Queries: the first 10,000 TREC 2006 efficiency queries, repeated REPS
# times (default 10) with qids made unique (rep-qid), so that each run lasts
# long enough to time; all queries top-10. Collections: COLLS (default
# "gcide rfc-pages"), modes MODES (default "and or andor"), ROUNDS rounds
# (default 2) of old and new alternating. Output: $OUT/realcli.txt, one line
# per measurement: `qp query`'s queries/s (first query to last run line,
# cold: the first chunk pays the warm-up) for old and new, and for new its
# summary's `time:` line: the cold total from process start (open, with the
# query file read and analyzed meanwhile) and the steady state after the
# first chunk, the figure to set against bench query's warm batch; `new16k`
# is new with --chunk 16384 (the old chunk size) on the GPU, to separate the
# chunk size from the rest.
source scripts/device/lib.sh
cd "$OUT" || exit 1
d=$bin/data
for f in "$d"/*.xz; do
  [ -e "$f" ] || continue
  b=$(basename "$f" .xz)
  [ -s "/tmp/$b" ] || xz -d -c "$f" >"/tmp/$b" || exit 1
done
chmod +x /tmp/qp-base 2>/dev/null
new=$bin/qp old=/tmp/qp-base
head -10000 "$d/06.efficiency_topics.txt" >/tmp/q06.txt
for r in $(seq 1 "${REPS:-10}"); do sed "s/^/r$r-/" /tmp/q06.txt; done >/tmp/q06x.txt
res=$OUT/realcli.txt
: >"$res"
log() { echo "$*" | tee -a "$res"; }
qps() { grep -o '[0-9.]* queries/s' | head -1; }
for c in ${COLLS:-gcide rfc-pages}; do
  idx=/tmp/$c.qp
  if [ ! -s "$idx" ]; then
    t=$(date +%s)
    "$new" index --in "/tmp/$c.jsonl" --out "$idx" --stem english --stopwords english --quiet >"$OUT/index-$c.log" 2>&1 || { tail -3 "$OUT/index-$c.log"; exit 1; }
    log "$c index: $(( $(date +%s) - t )) s: $(tail -1 "$OUT/index-$c.log")"
  fi
  sets="/tmp/q06x.txt"
  for extra in "$d/$c".*.tsv; do [ -e "$extra" ] && sets="$sets $extra"; done
  for qf in $sets; do
    n=$(wc -l <"$qf")
    for m in ${MODES:-and or andor}; do
      # The engine's own throughput: one warm batch of all queries.
      g=$("$new" bench query "$idx" "$qf" --limit "$n" --device gpu --gpu-only --modes $m 2>/dev/null | awk -v m=$m '$1==m{print $4; exit}')
      cpu=$("$new" bench query "$idx" "$qf" --limit "$n" --device cpu --modes $m --thread-counts 16 --and-algos skip --or-algos maxscore 2>/dev/null | awk -v m=$m '$1==m && $3==16{print $4; exit}')
      for round in $(seq 1 "${ROUNDS:-2}"); do
        for b in old new new16k; do
          bb=$new extra=
          [ $b = old ] && bb=$old
          [ $b = new16k ] && extra="--chunk 16384"
          "$bb" query "$idx" --device gpu --mode $m --queries "$qf" --run /tmp/run.$b.$m --quiet $extra >/tmp/g.out 2>&1
          gq=$(qps </tmp/g.out)
          line="$c $(basename "$qf") n=$n $m round$round $b: query gpu $gq"
          [ $b != old ] && line="$line [$(grep -o 'total.*' /tmp/g.out)]"
          if [ $b != new16k ]; then
            "$bb" query "$idx" --device cpu --threads 16 --mode $m --queries "$qf" --run /tmp/crun.$b.$m --quiet >/tmp/c.out 2>&1
            line="$line; query cpu16 $(qps </tmp/c.out)"
            [ $b = new ] && line="$line [$(grep -o 'total.*' /tmp/c.out)]"
          fi
          log "$line | bench gpu $g q/s, bench cpu16 $cpu q/s"
        done
      done
      cmp -s /tmp/run.old.$m /tmp/run.new.$m && cmp -s /tmp/run.new.$m /tmp/crun.new.$m && cmp -s /tmp/run.new.$m /tmp/run.new16k.$m &&
        cmp -s /tmp/crun.old.$m /tmp/crun.new.$m && log "  runs identical (old/new/new16k, gpu/cpu)" || log "  RUNS DIFFER"
    done
  done
done
