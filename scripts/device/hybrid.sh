#!/usr/bin/env bash
# scripts/device/hybrid.sh — issue #24 (CPU and GPU together) and issue #20's
# `--device auto` line, on a 16-core GPU host, in one call of ≤ 9 minutes:
#  1. the index of collection SCHED_COLL (default gcide, indexed there from
#     its carried JSONL in about a second), or with SCHED_COLL=gen `qp gen
#     --model topics --mem GENMEM (default 16G)` at DOCS documents (default
#     2M, ~30 s; 10M ~2 min at the 92k docs/s of the 25M run; at most
#     GENLIMIT, default 200 s) into /tmp/gDOCS-topics.qp, reused on a warm
#     machine;
#  2. `qp bench sched` for each of MODES (default "and or andor"): TREC 2006
#     log, deadline 200 ms, CPU alone (16 one-query slots), GPU alone, CPU+GPU
#     with the cost placement (cpu+gpu) and with the GPU-first placement
#     (cpu+gpu-first: every query to the GPU, the CPU takes the overflow; its
#     CPU capped online at 16 less the GPU side's host cores — the progress
#     lines in $OUT/sched-MODE.log give each run's cpu/gpu split, the GPU
#     batch model and the cap); the highest sustained rate to within 5%,
#     3 repeats with different arrivals (median, min-max), runs of ≥ 1 s of
#     arrivals, at most 7 runs per repeat; ≤ SCHEDLIMIT (default 120) s per
#     mode; table + delay-vs-rate plot in $OUT/sched-MODE/ (README.md,
#     delay-MODE.svg) and the log in $OUT/sched-MODE.log. SCHED_FLAGS adds
#     flags (e.g. "--cpu-batch 1ms --hybrid-cpu-slots 0": a CPU slot takes
#     up to 1 ms of predicted work per hand-off, and CPU+GPU gets the CPU
#     slots of the best probed core split, --split-probe, ~2 s; off by
#     default since they lowered the rates on the GPU machine), and
#     SETUPS replaces the setups (e.g. SETUPS=cpu+gpu SCHED_FLAGS="--hybrid-cpu-slots 8":
#     the hybrid alone with another core split, ~40 s a mode; or
#     SETUPS=cpu+gpu-first SCHED_FLAGS="--online-cores=false": GPU-first with
#     every CPU slot; SCHED_FLAGS="--target 0.5" or "--cpu-cheap 1": its
#     other parameters);
#  3. `qp query --device cpu|gpu|auto` on each of COLLS (default gcide; any
#     carried as NAME.jsonl.xz or NAME.qp.xz in bin/dev/data) with the first
#     QN (default 10,000) TREC'06 queries × REPS (default 10), top-10, AND, OR, AND+OR,
#     rounds A B C A B C; q/s per run in $OUT/auto.txt, with auto's routing
#     and whether the three runs are identical.
# PART=sched or PART=auto runs only step 2 or 3 (step 1 belongs to sched).
# The default (GCIDE, all three modes, both parts) takes about 7-8 minutes;
# with SCHED_COLL=gen run PART=sched and PART=auto as two calls. At 10M
# documents (estimates: gen ~2 min; a mode ~2 min with 3 repeats, of which
# ~10 s training, ~2 s split probe, 84 runs of ~1.2 s) PART=sched takes two
# calls: MODES="and or" SCHEDLIMIT=150, then MODES=andor SCHEDLIMIT=200 on
# the warm machine (the index is reused; a cold one generates it again) —
# or one call with REPEATS=2 SCHEDLIMIT=110 (2 repeats per setup, RUNS
# caps the runs per repeat).
#
# Build first (on the Go machine, repository root; ~14 MB to carry):
#   mkdir -p bin/dev/data && cp ../shared/data/queries/0[56].efficiency_topics.txt bin/dev/data/
#   CGO_ENABLED=0 go build -o /tmp/qp ./cmd/qp && xz -T0 -9 -c /tmp/qp >bin/dev/data/qp.xz
#   xz -T0 -9 -c /tmp/qp-data/collections/gcide/docs.jsonl >bin/dev/data/gcide.jsonl.xz
# and run with carry ["bin/dev"]:
#   bash scripts/device/hybrid.sh
source scripts/device/lib.sh
# Binaries and data carried xz'd in bin/dev/data: into /tmp, qp into bin/dev
# (a qp.xz carried now replaces the /tmp/qp a warm machine kept).
[ -e "$bin/data/qp.xz" ] && rm -f /tmp/qp
BIN=${BIN:-bin/dev} bash scripts/device/unpack.sh || exit 1
d=$bin/data
part=${PART:-all}
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 ))s; }

index_of() { # builds /tmp/$1.qp from /tmp/$1.jsonl unless present
  local c=$1 idx=/tmp/$1.qp
  if [ ! -s "$idx" ]; then
    [ -s "/tmp/$c.jsonl" ] || { echo "no /tmp/$c.jsonl or $idx" >&2; return 1; }
    timeout 120 "$bin/qp" index --in "/tmp/$c.jsonl" --out "$idx" --stem english --stopwords english --quiet \
      >"$OUT/index-$c.log" 2>&1 || { tail -3 "$OUT/index-$c.log" >&2; return 1; }
  fi
  echo "$idx"
}

if [ "$part" = all ] || [ "$part" = sched ]; then
  if [ "${SCHED_COLL:-gcide}" != gen ]; then
    idx=$(index_of "${SCHED_COLL:-gcide}") || exit 1
  else
    idx=/tmp/g${DOCS:-2000000}-topics.qp
    if [ ! -s "$idx" ]; then
      timeout "${GENLIMIT:-200}" "$bin/qp" gen --model topics --docs "${DOCS:-2000000}" --mem "${GENMEM:-16G}" --out "$idx" --quiet \
        --queries "$d/05.efficiency_topics.txt" --queries "$d/06.efficiency_topics.txt" >"$OUT/gen.log" 2>&1 \
        || { echo "gen failed"; tail -3 "$OUT/gen.log"; exit 1; }
    fi
  fi
  echo "== index $idx ready at $(elapsed)"
  for m in ${MODES:-and or andor}; do
    timeout "${SCHEDLIMIT:-120}" "$bin/qp" bench sched "$idx" "$d/06.efficiency_topics.txt" --device gpu --mode "$m" \
      --train 1500 --replay 3000 --rates "${RATES:-2000,200000}" --deadline 200ms --min-duration 1s \
      --search-runs "${RUNS:-7}" --search-repeats "${REPEATS:-3}" --setups "${SETUPS:-cpu-only,gpu-only,cpu+gpu,cpu+gpu-first}" ${SCHED_FLAGS:-} \
      --report "$OUT/sched-$m" >"$OUT/sched-$m.log" 2>&1
    echo "== sched $m rc=$? at $(elapsed)"
    grep -E -m3 'host side|core split|CPU\+GPU runs' "$OUT/sched-$m.log"
    sed -n '/highest sustained/,$p' "$OUT/sched-$m.log"
  done
fi

if [ "$part" = all ] || [ "$part" = auto ]; then
  head -"${QN:-10000}" "$d/06.efficiency_topics.txt" >/tmp/q06.txt
  for r in $(seq 1 "${REPS:-10}"); do sed "s/^/r$r-/" /tmp/q06.txt; done >/tmp/q06x.txt
  res=$OUT/auto.txt
  : >"$res"
  log() { echo "$*" | tee -a "$res"; }
  for c in ${COLLS:-gcide}; do
    idx=$(index_of "$c") || continue
    for m in and or andor; do
      line="$c $m:"
      for round in 1 2; do
        for dev in cpu gpu auto; do
          # Not --quiet: auto prints its routing on stderr (the bar goes there too).
          q=$(timeout 60 "$bin/qp" query "$idx" --device $dev --mode $m --queries /tmp/q06x.txt \
            --run /tmp/run.$dev.$m 2>"$OUT/query-$c-$m-$dev.err" | grep -o '[0-9.]* queries/s' | head -1)
          line="$line $dev ${q% queries/s}"
        done
        line="$line |"
      done
      log "$line q/s (rounds: cpu gpu auto)"
      grep -A3 '^device auto' "$OUT/query-$c-$m-auto.err" | sed 's/^/  /' | tee -a "$res"
      cmp -s /tmp/run.cpu.$m /tmp/run.gpu.$m && cmp -s /tmp/run.cpu.$m /tmp/run.auto.$m \
        && log "  runs identical (cpu, gpu, auto)" || log "  RUNS DIFFER"
    done
  done
  echo "== auto at $(elapsed)"
fi
