#!/usr/bin/env bash
# scripts/device/sched3.sh — issue 24, third round: CPU alone, GPU alone and
# CPU+GPU (GPU-first) for AND, OR and AND+OR on one collection per call, by
# `qp bench sched`'s rate search (deadline 200 ms, to 5%, 2 repeats, no upper
# bound on the rate; runs of at least 1 s of Poisson arrivals of the TREC
# 2006 efficiency log; 1,500 training queries, 3,000 replayed). The binary's
# defaults are the ones measured: --cpu-batch 100us, --placement gpu-first,
# GOGC 400 with a soft memory limit of half the machine (GC=100 runs
# GOGC=100 instead, the Go default, for the GC question).
#
#   COLL=gcide      the GCIDE JSONL carried (bin/dev/data/gcide.jsonl.xz),
#                   indexed here (~10 s); about 6-8 minutes in all.
#   COLL=rfc-pages  the RFC pages index carried, built on the Go machine
#                   with the same binary (bin/dev/data/rfc-pages.qp.xz, ~30 MB;
#                   the JSONL is 421 MB); about 7-9 minutes.
#   COLL=gen10m     a topic-model gen index of 10M documents with the TREC
#                   2005/2006 query terms, /tmp/g10m-topics.qp, kept on the
#                   warm machine: GEN=1 builds it and exits (~4-5 minutes
#                   on 16 cores; GENLIMIT 500 s); then, on the same warm
#                   machine, a second call runs the three modes (at most
#                   3 x SLIMIT, ~8.5 min; MODES splits it if need be). If
#                   CPU alone sustains nothing at 10M documents (single
#                   queries past the deadline), DEADLINE=500ms.
#
# Per mode one process, at most SLIMIT (170) s; a mode is skipped once
# BUDGET (400) s have passed since the start (the call's 10 minutes). RUNS
# (8) runs per repeat, REPEATS (2). Output: $OUT/sched3-COLL.txt (the
# summary below), $OUT/sched-COLL-MODE.log (every run: rate, delays, CPU per
# query, GPU batches) and $OUT/sched-COLL-MODE/README.md + delay-MODE.svg,
# everything packed into $OUT/all.tgz. Stdout: per mode the "highest
# sustained" table with the ratios (CPU+GPU / the better, / the sum).
#
# Build (on the Go machine, repository root; ~45 MB with both collections):
#   mkdir -p bin/dev/data && cp ../shared/data/queries/0[56].efficiency_topics.txt bin/dev/data/
#   CGO_ENABLED=0 go build -o /tmp/qp ./cmd/qp && xz -T0 -9 -c /tmp/qp >bin/dev/data/qp.xz
#   xz -T0 -9 -c /tmp/qp-data/collections/gcide/docs.jsonl >bin/dev/data/gcide.jsonl.xz     # COLL=gcide
#   /tmp/qp index --in /tmp/qp-data/collections/rfc-pages/docs.jsonl --out /tmp/rfc-pages.qp \
#     --stem english --stopwords english && xz -T0 -6 -c /tmp/rfc-pages.qp >bin/dev/data/rfc-pages.qp.xz  # COLL=rfc-pages
# (the RFC pages index must come from the same binary: the index format is
# the build's), then with carry ["bin/dev"] (one carry serves every call):
#   COLL=gcide bash scripts/device/sched3.sh
#   COLL=rfc-pages bash scripts/device/sched3.sh
#   COLL=gen10m GEN=1 bash scripts/device/sched3.sh                # builds the index
#   COLL=gen10m bash scripts/device/sched3.sh                      # same warm machine
source scripts/device/lib.sh
if [ "${UNPACK:-1}" = 1 ]; then
  [ -e "$bin/data/qp.xz" ] && rm -f /tmp/qp
  BIN=${BIN:-bin/dev} bash scripts/device/unpack.sh || exit 1
fi
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 ))s; }
coll=${COLL:-gcide}
queries=${QUERIES:-$bin/data/06.efficiency_topics.txt}
case $coll in
gen10m)
  idx=/tmp/g10m-topics.qp
  gen_index "$idx" "${GENLIMIT:-500}" --model topics --docs "${DOCS:-10000000}" || exit 1
  [ "${GEN:-0}" = 1 ] && { ls -la "$idx"; exit 0; }
  ;;
*)
  idx=/tmp/$coll.qp
  if [ ! -s "$idx" ]; then
    [ -s "/tmp/$coll.jsonl" ] || { echo "no /tmp/$coll.qp nor /tmp/$coll.jsonl (carry bin/dev/data/$coll.jsonl.xz or $coll.qp.xz)"; exit 1; }
    timeout 300 "$bin/qp" index --in "/tmp/$coll.jsonl" --out "$idx" --stem english --stopwords english --quiet \
      >"$OUT/index.log" 2>&1 || { tail -3 "$OUT/index.log"; rm -f "$idx"; exit 1; }
  fi
  ;;
esac
echo "== $coll index ready at $(elapsed); $(nproc) cores; $(head -2 "$OUT/device.txt" | tail -1)"
gcenv=()
[ -n "${GC:-}" ] && gcenv=("GOGC=$GC")
sum=$OUT/sched3-$coll.txt
: >"$sum"
for m in ${MODES:-and or andor}; do
  if [ $(( $(date +%s) - T0 )) -gt "${BUDGET:-400}" ]; then echo "== skipping $m: past ${BUDGET:-400}s" | tee -a "$sum"; continue; fi
  log=$OUT/sched-$coll-$m.log
  env "${gcenv[@]}" timeout "${SLIMIT:-170}" "$bin/qp" bench sched "$idx" "$queries" --device gpu --mode "$m" \
    --train "${TRAIN:-1500}" --replay "${REPLAY:-3000}" --deadline "${DEADLINE:-200ms}" --rates "" --min-duration 1s \
    --search-runs "${RUNS:-8}" --search-repeats "${REPEATS:-2}" --setups cpu-only,gpu-only,cpu+gpu-first \
    ${FLAGS:-} --report "$OUT/sched-$coll-$m" >"$log" 2>&1
  rc=$?
  { echo "== $coll $m rc=$rc at $(elapsed) ($(head -1 "$log" | cut -c1-120))"
    sed -n '/highest sustained/,$p' "$log" | cut -c1-170; } | tee -a "$sum"
done
tar czf /tmp/sched3-all.tgz -C "$OUT" . && mv /tmp/sched3-all.tgz "$OUT/all.tgz"
find "$OUT" -mindepth 1 -maxdepth 1 ! -name all.tgz ! -name device.txt ! -name "sched3-$coll.txt" -exec rm -rf {} +
ls -la "$OUT"
