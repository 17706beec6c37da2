#!/usr/bin/env bash
# scripts/device/cliab.sh — issue 20 §4 and issue 23's last paragraph: the
# user-facing `qp query` against the engine's own `qp bench query`, switch
# by switch (QP_QUERY_TUNE, cmd/qp/querytune.go), old binary against new,
# GPU and 16 cores, in alternating rounds.
#
# Carry bin/dev (scripts/device/build.sh, or only bin/dev/qp) with, in
# bin/dev/data:
#   qp-old.xz                 the binary to compare with (a main build)
#   qp.xz                     optional: the new qp, xz'd (else bin/dev/qp)
#   NAME.jsonl.xz | NAME.qp.xz each collection of COLLS, as JSONL (indexed
#                             there: qp index --stem english --stopwords
#                             english) or as an index built here
#   06.efficiency_topics.txt  the TREC 2006 efficiency log
# Queries: the first 10,000 TREC'06 queries repeated R times with unique
# qids (rR-qid), for each R of REPS (default "10 100": 100k and 1M queries);
# QSET=FILE (in bin/dev/data, e.g. gcide.known.tsv from `qp queries
# gcide.qp --out gcide.known.tsv --kinds known --n 10000 --seed 1`) takes
# the first 10,000 of FILE instead, its blocks named COLL/FILE-without-.tsv.
# DEVS may name auto (qp query --device auto, all cores; its ratio is to
# the CPU's bench query on THREADS workers; AUTO_BENCH=0 skips that bench).
#
# Each measurement block (collection, R, mode, device) runs `bench query`
# once (BENCH_EACH=1: again before every later round, and each round's
# ratios are to its own bench run; ABBA=1 reverses the variants' order on
# even rounds) (one warm batch of all queries: --gpu-only on the GPU; 16 threads,
# skip and maxscore on the CPU), then ROUNDS (default 2) rounds of the
# variants in turn. A variant is TUNE[@CHUNK][%null]: "old" (the old binary),
# "none" (the new binary, no switch), "race" and "repeat" (the new
# binary's device auto with a new routing profile, then with the one the
# last run left, --auto-profile; "handoff": race with that switch), or a
# QP_QUERY_TUNE list, "all" being
# $ALL; @CHUNK sets --chunk; %null writes the run to /dev/null (still
# formatted and written: bench query writes nothing, so the run's cost is
# the difference from the same variant without %null; its run is not
# compared). Variants: V10GPU, V10CPU for R=10 and V100GPU, V100CPU for
# larger R (defaults below); the auto rows take V10AUTO and V100AUTO,
# by default the CPU's lists. THREADS (default 16) sets the CPU rows' and
# the CPU variants' workers.
#
# Output, under $OUT:
#   cliab.txt        one line per run: stream q/s (the summary's figure:
#                    first query to last run line), and for new variants
#                    --stats' steady (after the first chunk) and cold
#                    (from process start) rates, the CPU µs per query
#                    and --stats' split of it (search_us: the engine's own
#                    times; fmt_us: the run lines the workers formatted;
#                    rest_us); "KEY benchcpu ROUND:" lines give each bench
#                    run's engine time (mean_ms) and CPU µs per query
#                    (cpu_us: its timed batch's getrusage); "runs identical" or
#                    "RUNS DIFFER" per block (every variant's run against
#                    the old binary's, GPU and CPU)
#   cliab-table.txt  the compact table: per block and variant, the rounds'
#                    range of stream q/s, its ratio to bench, steady, cold,
#                    CPU, search and format µs per query (bench's row: its
#                    CPU µs per query and mean ms per round)
#   cliab-stats.txt  --stats of each new variant's first round (phases,
#                    rates, GC, one line per chunk)
#   device.txt       the GPU
# A block starts only while less than BUDGET seconds have
# passed (default 450), so that the call ends within 9 minutes (a block of
# R=100 on RFC pages can last a minute); skipped blocks are named.
# Order: R=10 on every collection first, then R=100.
source scripts/device/lib.sh
cd "$OUT" || exit 1
t0=$(date +%s)
tmp=${WORK:-/tmp} # where the binaries, indexes, query files and runs go
mkdir -p "$tmp"
d=$bin/data
for f in "$d"/*.xz; do
  [ -e "$f" ] || continue
  b=$(basename "$f" .xz)
  # Binaries always afresh (a warm machine may hold an earlier call's);
  # collections and indexes are kept.
  case $b in qp | qp-old) rm -f "$tmp/$b" ;; esac
  [ -s "$tmp/$b" ] || xz -T0 -d -c "$f" >"$tmp/$b" || exit 1
done
chmod +x $tmp/qp-old $tmp/qp 2>/dev/null
new=$bin/qp old=$tmp/qp-old
[ -s $tmp/qp ] && new=$tmp/qp
[ -x "$old" ] || { echo "no $old (carry bin/dev/data/qp-old.xz)"; exit 1; }
ALL=${ALL:-prealloc,warm,gc=off,par,cont,early}
V10GPU=${V10GPU:-old none prealloc warm gc=off fmt=4 par early none@65536 all all@65536}
V10CPU=${V10CPU:-old none prealloc cont prealloc,cont none%null cont%null}
V100GPU=${V100GPU:-old none all all@65536}
V100CPU=${V100CPU:-old none cont prealloc,cont none%null}
res=$OUT/cliab.txt stats=$OUT/cliab-stats.txt
declare -A firstdev # "coll R mode" -> the first processor whose none run was kept
: >"$res"
: >"$stats"
log() { echo "$*" | tee -a "$res"; }
log "new $($new version 2>&1 | head -1); old $($old version 2>&1 | head -1); ALL=$ALL"
# QSET=NAME (a file bin/dev/data/NAME, e.g. gcide.known.tsv from qp queries)
# replaces the TREC'06 log; its blocks are named COLL/NAME.
qs=q06
[ -n "${QSET:-}" ] && qs=$QSET
qsrc=$d/06.efficiency_topics.txt
[ -n "${QSET:-}" ] && qsrc=$d/$QSET
[ -s "$qsrc" ] || { echo "no query file $qsrc"; exit 1; }
head -10000 "$qsrc" >$tmp/$qs.txt
for R in ${REPS:-10 100}; do
  [ -s $tmp/${qs}x$R.txt ] || for r in $(seq 1 "$R"); do sed "s/^/r$r-/" $tmp/$qs.txt; done >$tmp/${qs}x$R.txt
done
for c in ${COLLS:-gcide rfc-pages}; do
  idx=$tmp/$c.qp
  if [ ! -s "$idx" ]; then
    t=$(date +%s)
    "$new" index --in "$tmp/$c.jsonl" --out "$idx" --stem english --stopwords english --quiet >$tmp/index-$c.log 2>&1 || { tail -3 $tmp/index-$c.log; exit 1; }
    log "$c index: $(( $(date +%s) - t )) s: $(tail -1 $tmp/index-$c.log)"
  fi
done

# one runs variant $1 on device $2 (block key $3, round $4; idx, qf, m set)
one() {
  local v=$1 dev=$2 key=$3 round=$4 bb=$new extra="" st=--stats base run tune
  base=${v%\%null} # the variant without %null
  run=$tmp/run.$dev.$m.$base
  [ "$base" != "$v" ] && run=/dev/null
  tune=${base%@*}
  [ "$base" != "${base#*@}" ] && extra="--chunk ${base#*@}"
  [ "$tune" = old ] && bb=$old tune="" st=""
  [ "$tune" = oldrace ] && bb=$old st=""
  # race and repeat (device auto, branch auto4): the run with a routing
  # profile of its own (--auto-profile, one per block), new for race (a
  # race measures both processors and writes it), the last one's for
  # repeat (started on the recorded winner's stream); handoff is race
  # with QP_QUERY_TUNE=gpuhandoff (once the CPU stopped, the rest on the
  # GPU's own stream instead of the race going on as the GPU's stream,
  # the default), with a new profile of its own; nohelp (branch auto6) is
  # race with QP_QUERY_TUNE=racenohelp, oldrace the old binary's race
  # (its auto with a new profile each run: without one, a round after the
  # first would start on the profile the first left in the user's cache).
  case $tune in
    race | repeat | handoff | nohelp | oldrace)
      local prof=$tmp/prof/$(echo "$key" | tr ' /' '__').json
      mkdir -p "$tmp/prof"
      case $tune in handoff | nohelp | oldrace) prof=${prof%.json}.$tune.json ;; esac
      [ "$tune" = repeat ] || rm -f "$prof"
      extra="$extra --auto-profile $prof"
      case $tune in handoff) tune=gpuhandoff ;; nohelp) tune=racenohelp ;; *) tune="" ;; esac
      ;;
  esac
  [ "$tune" = none ] && tune=""
  [ "$tune" = all ] && tune=$ALL
  [ "$dev" = cpu ] && extra="$extra --threads ${THREADS:-16}"
  QP_QUERY_TUNE=$tune "$bb" query "$idx" --device "$dev" --mode "$m" --queries "$qf" --run "$run" --quiet $st $extra >$tmp/o.txt 2>$tmp/e.txt ||
    { log "$key $v round$round: FAILED: $(tail -2 $tmp/e.txt)"; return; }
  local q line
  q=$(grep -o '[0-9.]* queries/s' $tmp/o.txt | head -1 | cut -d' ' -f1)
  line="$key $v round$round: stream $q"
  if [ -n "$st" ]; then
    line="$line steady $(grep -o 'steady [0-9]*' $tmp/e.txt | cut -d' ' -f2) cold $(grep -o 'cold total [0-9]*' $tmp/e.txt | cut -d' ' -f3)"
    local c
    c=$(grep -o '[0-9.]* µs per query' $tmp/e.txt | cut -d' ' -f1)
    [ -n "$c" ] && line="$line cpu_us $c"
    # --stats' CPU split: the engine's own times and the workers'
    # formatting per query (set beside bench's mean ms and cpu µs/q).
    c=$(sed -n 's/.*CPU split (µs per query): search \([-0-9.]*\) .*formatting by the workers \([-0-9.]*\), the rest \([-0-9.]*\).*/\1 \2 \3/p' $tmp/e.txt)
    [ -n "$c" ] && line="$line $(echo $c | awk '{print "search_us " $1 " fmt_us " $2 " rest_us " $3}')"
    [ "$round" = 1 ] && { echo "== $key $v"; cat $tmp/e.txt; } >>"$stats"
  fi
  log "$line"
}

# benchq prints bench query's rate for the block (dev, m, idx, qf, n set)
# and logs its row's engine time a query (mean ms) and CPU µs a query (the
# new binary's last column) as "KEY benchcpu ROUND: mean_ms X cpu_us Y".
benchq() {
  local row
  if [ "$dev" = gpu ]; then
    row=$("$new" bench query "$idx" "$qf" --limit "$n" --device gpu --gpu-only --modes "$m" 2>/dev/null | awk -v m="$m" '$1==m{print; exit}')
  else
    row=$("$new" bench query "$idx" "$qf" --limit "$n" --device cpu --modes "$m" --thread-counts "${THREADS:-16}" --and-algos skip --or-algos maxscore 2>/dev/null | awk -v m="$m" -v t="${THREADS:-16}" '$1==m && $3==t{print; exit}')
  fi
  echo "$key benchcpu ${round:-1}: $(echo "$row" | awk '{print "mean_ms " $5 " cpu_us " $NF}')" >>"$res"
  echo "$row" | awk '{print $4}'
}

for R in ${REPS:-10 100}; do
  qf=$tmp/${qs}x$R.txt n=$((R * $(wc -l <$tmp/$qs.txt)))
  for c in ${COLLS:-gcide rfc-pages}; do
    idx=$tmp/$c.qp
    for m in ${MODES:-and or andor}; do
      for dev in ${DEVS:-gpu cpu}; do
        key="$c x$R $m $dev"
        [ -n "${QSET:-}" ] && key="$c/${QSET%.*} x$R $m $dev"
        if [ $(( $(date +%s) - t0 )) -ge "${BUDGET:-450}" ]; then log "$key: skipped (budget)"; continue; fi
        round=1 b=0
        # AUTO_BENCH=0: no bench query for the auto rows (it is the CPU's).
        [ "$dev" = auto ] && [ "${AUTO_BENCH:-1}" = 0 ] || b=$(benchq)
        if [ "$dev" = gpu ]; then
          vs=$V10GPU
          [ "$R" -gt 10 ] && vs=$V100GPU
        else
          vs=$V10CPU
          [ "$R" -gt 10 ] && vs=$V100CPU
          if [ "$dev" = auto ]; then
            vs=${V10AUTO:-$V10CPU}
            [ "$R" -gt 10 ] && vs=${V100AUTO:-$V100CPU}
          fi
        fi
        log "$key bench $b"
        for round in $(seq 1 "${ROUNDS:-2}"); do
          if [ "${BENCH_EACH:-0}" = 1 ] && [ "$round" -gt 1 ]; then
            log "$key benchr$round $(benchq)"
          fi
          order=$vs
          # ABBA=1: the variants in reverse order on even rounds, so that
          # none always runs first after bench query (a run right after
          # bench's all-core burst measured slower on these hosts).
          if [ "${ABBA:-0}" = 1 ] && [ $((round % 2)) = 0 ]; then order=$(echo $vs | tr ' ' '\n' | tac | tr '\n' ' '); fi
          for v in $order; do one "$v" "$dev" "$key" "$round"; done
        done
        same="runs identical"
        # Without an old variant in the block there is nothing to compare
        # with (a stale run of an earlier block must not count); oldrace
        # is the reference where there is no old.
        ref=old
        case " $vs " in *" old "*) ;; *" oldrace "*) ref=oldrace ;; *) same="not compared (no old variant)"; rm -f "$tmp/run.$dev.$m.old" ;; esac
        for v in $vs; do
          [ "$same" = "not compared (no old variant)" ] && break
          [ "$v" = "$ref" ] || [ "$v" != "${v%\%null}" ] && continue
          cmp -s "$tmp/run.$dev.$m.$ref" "$tmp/run.$dev.$m.$v" || same="RUNS DIFFER ($v)"
        done
        # The new binary's runs on the processors of this block's
        # collection and mode so far (this call's only) must agree.
        if case " $vs " in *" none "*) true ;; *) false ;; esac; then
          k2="$c $R $m"
          if [ -n "${firstdev[$k2]:-}" ]; then
            cmp -s "$tmp/run.${firstdev[$k2]}.$m.none" "$tmp/run.$dev.$m.none" && same="$same; none equals ${firstdev[$k2]}'s" || same="$same; NONE DIFFERS FROM ${firstdev[$k2]}'s"
          else
            firstdev[$k2]=$dev
          fi
        fi
        # Both processors' old runs, where this call made both (a CPU block
        # without an old variant removed its own: no comparison then).
        if [ "$dev" = cpu ] && [ -e "$tmp/run.gpu.$m.old" ] && [ -e "$tmp/run.cpu.$m.old" ]; then
          cmp -s "$tmp/run.gpu.$m.old" "$tmp/run.cpu.$m.old" || same="$same; GPU AND CPU RUNS DIFFER"
        fi
        log "$key: $same"
      done
    done
  done
done
log "elapsed $(( $(date +%s) - t0 )) s"

# The table: per block and variant, the rounds' range.
awk '
/ bench / { split($0, a, " bench "); bench[a[1]] = a[2]; order[++nb] = a[1]; next }
/ benchcpu [0-9]+: / { key = $1 " " $2 " " $3 " " $4; bcpu[key] = bcpu[key] (bcpu[key] == "" ? "" : "/") $10; bmean[key] = bmean[key] (bmean[key] == "" ? "" : "/") $8; next }
/ benchr[0-9]+ / { key = $1 " " $2 " " $3 " " $4; r = substr($5, 7); br[key, r] = $6; bench[key] = bench[key] "/" $6; next }
/ round[0-9]+: stream / {
  key = $1 " " $2 " " $3 " " $4; v = $5; s = $8
  r = $6; gsub(/[^0-9]/, "", r)
  split(bench[key], b1, "/"); den = (key SUBSEP r) in br ? br[key, r] : b1[1]
  k = key SUBSEP v
  q = den > 0 ? s / den : 0
  if (!(k in lo)) { vorder[key] = vorder[key] " " v; lo[k] = s; hi[k] = s; rlo[k] = q; rhi[k] = q } else { if (s < lo[k]) lo[k] = s; if (s > hi[k]) hi[k] = s; if (q < rlo[k]) rlo[k] = q; if (q > rhi[k]) rhi[k] = q }
  for (i = 9; i < NF; i += 2) if ($i == "steady" || $i == "cold" || $i == "cpu_us" || $i == "search_us" || $i == "fmt_us") val[k, $i] = val[k, $i] (val[k, $i] == "" ? "" : "/") $(i + 1)
}
function k_(x) { return sprintf("%.0fk", x / 1000) }
END {
  printf "%-22s %-30s %-16s %-11s %-18s %-18s %-18s %-18s %s\n", "block", "variant", "stream q/s", "/bench", "steady q/s", "cold q/s", "CPU µs/query", "search µs/query", "fmt µs/query"
  for (b = 1; b <= nb; b++) {
    key = order[b]; nbv = split(bench[key], bv, "/"); bs = ""
    for (j = 1; j <= nbv; j++) bs = bs (j > 1 ? "/" : "") k_(bv[j])
    printf "%-22s %-30s %-16s %-11s %-18s %-18s %-18s %-18s\n", key, "bench query", bs, "", "", "", bcpu[key], bmean[key] " (mean ms)"
    n = split(vorder[key], vs, " ")
    for (j = 1; j <= n; j++) {
      k = key SUBSEP vs[j]
      r = bv[1] > 0 ? sprintf("%.2f-%.2f", rlo[k], rhi[k]) : "-"
      printf "%-22s %-30s %-16s %-11s %-18s %-18s %-18s %-18s %s\n", "", vs[j], k_(lo[k]) "-" k_(hi[k]), r, val[k, "steady"], val[k, "cold"], val[k, "cpu_us"], val[k, "search_us"], val[k, "fmt_us"]
    }
  }
}' "$res" >"$OUT/cliab-table.txt"
cat "$OUT/cliab-table.txt"
