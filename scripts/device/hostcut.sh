#!/usr/bin/env bash
# scripts/device/hostcut.sh — issue 24, branches hostcut and hostcut2: the
# host CPU a GPU query costs in `qp bench sched` (h, process CPU per GPU
# query), old (a main build, /tmp/qp-old) and mid (lead28 before hostcut2,
# /tmp/qp-mid) against new (this branch, bin/dev/qp), and CPU+GPU against
# the sum of the processors alone, on one collection (COLL, default gcide),
# in one call of under 9 minutes:
#
# Part 1 (PART1=1, the default; ~4 min, no run starts past PART1S s,
#   default 250): process CPU per GPU query at fixed rates, gpu-only,
#   `qp bench sched --setups gpu-only --rates R --search-runs 0`, fresh
#   processes interleaved A B C A B C (PAIRS, default 2; DUR, default 2s,
#   each), for each item MODE:RATE:VARIANTS of SPECS (default
#   "and:2000000:old,mid,new and:4000000:old,mid,new or:1500000:old,mid,new
#   andor:1000000:old,mid,new": AND at the rate of hostq.sh's profiles and
#   near the GPU alone's rate, OR and AND+OR below theirs). Variants:
#     old      main's binary (/tmp/qp-old, bin/dev/data/qp-old.xz)
#     mid      lead28 without hostcut2 (/tmp/qp-mid, bin/dev/data/qp-mid.xz):
#              the first round (a GPU batch's model learns from at most 256
#              queries)
#     new      this branch with its defaults
#     carry    new with --carry-lookups (not in the default SPECS: the
#              window keeps a real submitter's one lookup without it)
#   The first pair's runs at the first AND spec write Go CPU profiles
#   (prof-V-and.pprof; split them on the Go machine with
#   `bash scripts/profsplit.sh DIR/prof-*.pprof`).
# Part 2 (the rest of the call; not started past BUDGET s, default 260;
#   no search process started past LIMIT s, default 400, each at most
#   VLIMIT s, default 120):
#   scripts/device/sched4.sh's rate search for the modes of MODES (default
#   and), variants SEARCH (default "old new"): cpu-only, gpu-only,
#   cpu+gpu-first of each, one repeat, RUNS 8; its "ratio VARIANT MODE"
#   lines give /sum (issue 24's target >= 0.90) and /better (>= 1). OR's
#   search fits a second call: PART1=0 MODES=or (LIMIT=420).
#
# Build (Go machine; binaries under /tmp/hostcut2 so as not to clobber
# other sessions' /tmp/qp; run from this branch's repository root):
#   mkdir -p bin/dev/data /tmp/hostcut2 && cp ../shared/data/queries/06.efficiency_topics.txt bin/dev/data/
#   CGO_ENABLED=0 go build -o /tmp/hostcut2/qp ./cmd/qp && xz -T0 -9 -c /tmp/hostcut2/qp >bin/dev/data/qp.xz
#   for v in old:main mid:lead28; do n=${v%%:*} r=${v#*:}; rm -rf /tmp/hostcut2/src-$n; mkdir -p /tmp/hostcut2/src-$n &&
#     git -C /work/main archive "$r" | tar -x -C /tmp/hostcut2/src-$n &&
#     (cd /tmp/hostcut2/src-$n && CGO_ENABLED=0 go build -o /tmp/hostcut2/qp-$n ./cmd/qp) &&
#     xz -T0 -9 -c /tmp/hostcut2/qp-$n >bin/dev/data/qp-$n.xz; done
#   xz -T0 -6 -c /tmp/lead/hold/gcide.qp >bin/dev/data/gcide.qp.xz
# then, carry ["bin/dev"]:
#   bash scripts/device/hostcut.sh
#
# Output, under $OUT: hostcut.txt (the summary), all.tgz (every run's log,
# the searches' logs and the profiles). In hostcut.txt:
#   "V MODE@RATE: rc=0 gpu-only at R q/s: ... process CPU X/query ..." per
#   run, with its "gpu N batches of M" and "arrivals submitted in N bursts"
#   lines;
#   "ratio MODE@RATE: process CPU per query V/old, pairs: ...; mean r" per
#   spec and variant, and "... new/mid ..." (this branch's own cut);
#   then sched4's "ratio old MODE" and "ratio new MODE" lines.
source scripts/device/lib.sh
T0=$(date +%s)
rm -f /tmp/qp /tmp/qp-old /tmp/qp-mid
BIN=${BIN:-bin/dev} bash scripts/device/unpack.sh || exit 1
chmod +x /tmp/qp-old /tmp/qp-mid 2>/dev/null
[ -x /tmp/qp-old ] || { echo "no /tmp/qp-old (carry bin/dev/data/qp-old.xz)"; exit 1; }
coll=${COLL:-gcide}
idx=/tmp/$coll.qp
[ -s "$idx" ] || { echo "no $idx (carry bin/dev/data/$coll.qp.xz)"; exit 1; }
queries=$bin/data/06.efficiency_topics.txt
logs=/tmp/hostcut-logs
rm -rf "$logs" && mkdir -p "$logs"
sum=$OUT/hostcut.txt
echo "== $coll; $(nproc) cores; $(head -2 "$OUT/device.txt" | tail -1)" | tee "$sum"
if [ "${PART1:-1}" = 1 ]; then
  profiled=
  for spec in ${SPECS:-and:2000000:old,mid,new and:4000000:old,mid,new or:1500000:old,mid,new andor:1000000:old,mid,new}; do
    IFS=: read -r m rate vs <<<"$spec"
    variants=${vs//,/ }
    key="$m@$rate"
    for i in $(seq "${PAIRS:-2}"); do
      for v in $variants; do
        if [ $(( $(date +%s) - T0 )) -gt "${PART1S:-250}" ]; then echo "== skipping $v $key $i: past ${PART1S:-250}s" | tee -a "$sum"; continue; fi
        qp=$bin/qp flags=()
        case $v in
        old) qp=/tmp/qp-old ;;
        mid) qp=/tmp/qp-mid
          [ -x "$qp" ] || { echo "no /tmp/qp-mid (carry bin/dev/data/qp-mid.xz)" | tee -a "$sum"; continue; } ;;
        new) ;;
        carry) flags=(--carry-lookups) ;;
        *) echo "unknown variant $v"; continue ;;
        esac
        prof=()
        if [ "$i" = 1 ] && [ "$m" = and ] && [ -z "$profiled" -o "$profiled" = "$rate" ]; then
          profiled=$rate prof=(--cpuprofile "$logs/prof-$v-$m.pprof")
        fi
        log=$logs/fixed-$v-$m-$rate-$i.log
        timeout 120 "$qp" bench sched "$idx" "$queries" --device gpu --mode "$m" --setups gpu-only \
          --rates "$rate" --search-runs 0 --deadline 200ms --train 1500 --replay 3000 \
          --min-duration "${DUR:-2s}" "${flags[@]}" "${prof[@]}" >"$log" 2>&1
        echo "$v $key: rc=$? $(grep -o 'gpu-only at .*' "$log" | head -1 | cut -c1-230)" | tee -a "$sum"
        { grep -o 'gpu [0-9]* batches of [0-9]* queries, busy [0-9]*%' "$log" | head -1
          grep -o 'arrivals submitted .*' "$log" | tail -1; } | sed "s/^/  $v $key /" | tee -a "$sum"
      done
    done
    for v in $variants; do
      [ "$v" = old ] && continue
      cpu_ratio "$key" "$v" "$sum"
    done
    case ",$vs," in *,mid,*) case ",$vs," in *,new,*) cpu_ratio "$key" new "$sum" mid ;; esac ;; esac
  done
  echo "== part 1 done at $(( $(date +%s) - T0 ))s" | tee -a "$sum"
fi
if [ -n "${SEARCH-old new}" ] && [ $(( $(date +%s) - T0 )) -lt "${BUDGET:-260}" ]; then
  OUT=$logs/sched4 UNPACK=0 COLL=$coll MODES="${MODES:-and}" VARIANTS="${SEARCH:-old new}" \
    BUDGET=$(( ${LIMIT:-400} - ($(date +%s) - T0) )) VLIMIT=${VLIMIT:-120} bash scripts/device/sched4.sh >"$logs/sched4.out" 2>&1
  grep -h "^ratio\|^== \|skipping" "$logs/sched4/sched4-$coll.txt" "$logs/sched4.out" 2>/dev/null | sort -u | tee -a "$sum"
  sed -n '/highest sustained/,/^$/p' "$logs/sched4/sched4-$coll.txt" 2>/dev/null | cut -c1-150 >>"$sum"
else
  echo "== part 2 skipped (SEARCH empty or past ${BUDGET:-260}s)" | tee -a "$sum"
fi
tar czf "$OUT/all.tgz" -C "$logs" . 2>/dev/null
echo "== done at $(( $(date +%s) - T0 ))s" | tee -a "$sum"
ls -la "$OUT"
