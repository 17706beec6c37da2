#!/usr/bin/env bash
# scripts/device/contention.sh — issue 24: why the GPU's batches slow down
# when CPU query workers share the host, and what helps, on a 16-core GPU
# host with GCIDE, in one call of about 7.5 minutes (≤ 9). Third version
# (after the lead's run 1 of the fourteenth session, docs/BENCHMARKS.md):
#  1. `qp bench sched --diagnose K,...` for MODES (default "or andor", where
#     run 1 saw the GPU slow beside 16 workers) under DIAGV variants
#     (default base:0,16 gosched:16 gcyield:16 nice10:16): the GPU runs the
#     TREC'06 queries in its batches back to back beside K CPU workers
#     (no dispatcher), 1 s per K; per K the CPU, GPU and total q/s, the GPU
#     batch's wall split into prepare + hand-off + owner closure [stream
#     waits, conversion], device time, the CUDA thread's CPU, run delay and
#     involuntary switches, and GC / scheduling latency (runtime/metrics).
#     Variants: gosched = CPU workers call runtime.Gosched between queries;
#     gcyield = that and GOGC=400; nice10 = CPU workers' threads at nice +10;
#     also procs17 (GOMAXPROCS=17), blocking/yield (QP_CUDA_SYNC), gogc400,
#     p17block, p20nice (GOMAXPROCS=20 + nice 10).
#  2. the live scheduler at fixed rates LRATES (default 300000,400000) for
#     LMODES (default "and andor"): cpu-only, gpu-only, cpu+gpu-first, each
#     run followed by its GPU batches' host phases and device time, GC and
#     scheduling latency, and the gap from a batch's return to the next
#     batch's start; a Go CPU profile of each process in live-MODE.prof
#     (go tool pprof -top: where the scheduler's own per-query work goes).
#  3. the rate search (deadline 200 ms, REPEATS (2) repeats, to 5%, at most
#     RUNS (5) runs per repeat) for SMODES (default "and andor") under
#     SVARIANTS (default "gogc400 gcspare gcbatch"; run 1 had base, which
#     SVARIANTS=base repeats): gogc400 (GOGC=400, which run 1 showed helps)
#     runs cpu-only, gpu-only, cpu+gpu-first; gcspare (GOGC=400 and
#     --spare-fixed 3: the CPU leaves the GPU the head of its queue, a batch
#     whose fixed part is at most a quarter of its time, so that a CPU
#     taking the overflow no longer shrinks the GPU's batches) and gcbatch
#     (GOGC=400 and --cpu-batch 200us: a CPU slot takes up to 200 µs of
#     predicted overflow per hand-off) run cpu+gpu-first only; gcrun
#     (GOGC=400 and --cpu-batch 100us: every CPU slot, CPU alone too, takes
#     a run of queued queries per hand-off, at most its share of the queue;
#     issue 24's scheduler-overhead work) runs all three. SLIMIT (85) s
#     per process; a process is skipped once BUDGET (490) s have passed.
# Everything under $OUT is packed into $OUT/all.tgz at the end (the device
# tool returns a few files only); stdout is the short summary.
# DIAG=0, LIVE=0 or SEARCH=0 skips a step. COLL (default gcide: /tmp/COLL.qp,
# built from /tmp/COLL.jsonl), QUERIES, TRAIN, REPLAY, DEADLINE change the
# data (the CUDA emulator smoke test: COLL=sg20k TRAIN=100 REPLAY=100
# DEADLINE=5s MODES=and UNPACK=0 with bin/qp built here). DIAGFOR (1s) is
# a probe's length, DLIMIT (40) s a diagnose process's limit.
#
# Build first (on the Go machine, repository root; ~14 MB to carry):
#   mkdir -p bin/dev/data && cp ../shared/data/queries/0[56].efficiency_topics.txt bin/dev/data/
#   CGO_ENABLED=0 go build -o /tmp/qp-sched ./cmd/qp && xz -T0 -9 -c /tmp/qp-sched >bin/dev/data/qp.xz
#   xz -T0 -9 -c /tmp/qp-data/collections/gcide/docs.jsonl >bin/dev/data/gcide.jsonl.xz
# and run with carry ["bin/dev"]:
#   bash scripts/device/contention.sh
source scripts/device/lib.sh
if [ "${UNPACK:-1}" = 1 ]; then
  [ -e "$bin/data/qp.xz" ] && rm -f /tmp/qp
  BIN=${BIN:-bin/dev} bash scripts/device/unpack.sh || exit 1
fi
d=$bin/data
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 ))s; }
nproc >"$OUT/nproc.txt"
coll=${COLL:-gcide}
queries=${QUERIES:-$d/06.efficiency_topics.txt}
idx=/tmp/$coll.qp
if [ ! -s "$idx" ]; then
  timeout 120 "$bin/qp" index --in "/tmp/$coll.jsonl" --out "$idx" --stem english --stopwords english --quiet \
    >"$OUT/index.log" 2>&1 || { tail -3 "$OUT/index.log"; exit 1; }
fi
echo "== index ready at $(elapsed); $(nproc) cores"
common=(--device gpu --train "${TRAIN:-1500}" --replay "${REPLAY:-3000}" --deadline "${DEADLINE:-200ms}")

# variant NAME -> environment assignments
envof() {
  case $1 in
    procs17) echo "GOMAXPROCS=17" ;;
    blocking) echo "QP_CUDA_SYNC=blocking" ;;
    yield) echo "QP_CUDA_SYNC=yield" ;;
    gogc400 | gcyield | gcbatch | gcspare | gcrun) echo "GOGC=400" ;;
    p17block) echo "GOMAXPROCS=17 QP_CUDA_SYNC=blocking" ;;
    p20nice) echo "GOMAXPROCS=20" ;;
  esac
}
# variant NAME -> extra flags: --cpu-nice (the CPU workers' threads at a
# raised nice value), --diagnose-yield (the probe's CPU workers call
# runtime.Gosched between queries, as the scheduler's sequential CPU slots
# now do beside a GPU), --cpu-batch (a CPU slot takes up to that much
# predicted overflow per hand-off: fewer dispatcher events per CPU query),
# --spare-fixed 3 (GPU-first: the CPU leaves the GPU the head of its queue,
# a batch whose fixed part is at most a quarter of its time)
flagsof() {
  case $1 in
    nice10 | p20nice) echo "--cpu-nice 10" ;;
    gosched | gcyield) echo "--diagnose-yield" ;;
    batch | gcbatch) echo "--cpu-batch 200us" ;;
    gcrun) echo "--cpu-batch 100us" ;;
    spare | gcspare) echo "--spare-fixed 3" ;;
  esac
}

# Step 1: the probes (MODES x DIAGV "variant:K,K,..."; run 1 of the
# fourteenth session ran the full set: DIAGV="base:0,8,15,16 procs17:16
# blocking:0,16 yield:16 gogc400:16 p17block:16").
if [ "${DIAG:-1}" = 1 ]; then
  : >"$OUT/diag.txt"
  for m in ${MODES:-or andor}; do
    for v in ${DIAGV:-base:0,16 gosched:16 gcyield:16 nice10:16}; do
      name=${v%%:*} ks=${v#*:}
      log=$OUT/diag-$m-$name.log
      env $(envof "$name") timeout "${DLIMIT:-40}" "$bin/qp" bench sched "$idx" "$queries" "${common[@]}" --mode "$m" $(flagsof "$name") \
        --diagnose "$ks" --diagnose-for "${DIAGFOR:-1s}" >"$log" 2>&1 || echo "diag $m $name rc=$?"
      grep '^K=' "$log" | sed "s/^/$m $name /" >>"$OUT/diag.txt"
      # stdout (the call's 12,000-character tail): rates and the batch's split, shortened
      grep -A1 '^K=' "$log" | sed -E -e "s/^K=([0-9]+) cpu workers: (cpu [0-9]+ q\/s), (gpu [0-9]+ q\/s), (total [0-9]+ q\/s).*/$m $name K=\1: \2 \3 \4/" \
        -e 's/^  gpu: /   /; s/ batches of /x/; s/ queries: wall /q wall /; s/\/query/\/q/g; s/ involuntary switches per batch/ invol\/batch/; s/owner thread /thread /; s/hand-off/handoff/' \
        | grep -v '^--' | cut -c1-240
    done
    echo "== diag $m at $(elapsed)"
  done
fi

# Step 2: the live scheduler at fixed rates (no search), every run with its
# GPU profile, runtime figures and batch gaps, and a Go CPU profile of the
# whole process (training included): LRATES per mode of LMODES.
if [ "${LIVE:-1}" = 1 ]; then
  for m in ${LMODES:-and andor}; do
    log=$OUT/live-$m.log
    timeout "${LLIMIT:-45}" "$bin/qp" bench sched "$idx" "$queries" "${common[@]}" --mode "$m" --rates "${LRATES:-300000,400000}" \
      --min-duration 1s --search-runs 0 --setups cpu-only,gpu-only,cpu+gpu-first --gpu-profile --cpuprofile "$OUT/live-$m.prof" >"$log" 2>&1
    echo "== live $m rc=$? at $(elapsed)"
    grep -E '^  (cpu-only|gpu-only|cpu\+gpu-first) at' "$log" | sed -E 's/ answered \(/ (/; s/, growing [a-z]+//; s/ \(error [^)]*\)//' | cut -c1-200
  done
fi

# Step 3: the rate search (SMODES x SVARIANTS; base runs cpu-only, gpu-only
# and cpu+gpu-first, the others the setups SETUPS_V (default those three
# too, as GOGC changes every setup; a variant with --cpu-batch only the
# hybrid: that flag changes the CPU alone too, measured in the twelfth
# session).
if [ "${SEARCH:-1}" = 1 ]; then
  for m in ${SMODES:-and andor}; do
    for e in ${SVARIANTS:-gogc400 gcspare gcbatch}; do
      if [ $(( $(date +%s) - T0 )) -gt "${BUDGET:-490}" ]; then echo "== skipping sched $m $e: past ${BUDGET:-490}s"; continue; fi
      setups=cpu-only,gpu-only,cpu+gpu-first
      threads=()
      [ "$e" = base ] || setups=${SETUPS_V:-$setups}
      case "$e" in batch | gcbatch | spare | gcspare) setups=cpu+gpu-first ;; esac
      case "$(envof "$e")" in *GOMAXPROCS=*) threads=(--threads "$(nproc)") ;; esac
      env $(envof "$e") timeout "${SLIMIT:-85}" "$bin/qp" bench sched "$idx" "$queries" "${common[@]}" --mode "$m" \
        --rates "${RATES:-100000}" --min-duration 1s --search-runs "${RUNS:-5}" --search-repeats "${REPEATS:-2}" \
        --setups "$setups" "${threads[@]}" $(flagsof "$e" | sed 's/--diagnose-yield//') --gpu-profile --report "$OUT/sched-$m-$e" >"$OUT/sched-$m-$e.log" 2>&1
      rc=$?
      echo "== sched $m $e ($(envof "$e") $(flagsof "$e")) rc=$rc at $(elapsed)"
      sed -n '/highest sustained/,$p' "$OUT/sched-$m-$e.log" | cut -c1-160
    done
  done
fi

# Everything in one file (the device tool returns a few files only).
tar czf /tmp/contention-all.tgz -C "$OUT" . && mv /tmp/contention-all.tgz "$OUT/all.tgz"
find "$OUT" -mindepth 1 -maxdepth 1 ! -name all.tgz ! -name device.txt -exec rm -rf {} +
ls -la "$OUT"
