#!/usr/bin/env bash
# scripts/device/contention.sh — issue 24: why the GPU's batches slow down
# when CPU query workers share the host, on a 16-core GPU host with GCIDE,
# in one call of about 8 minutes (≤ 9):
#  1. `qp bench sched --diagnose K,...` per mode (MODES, default "and or
#     andor"): the GPU runs the TREC'06 queries in its batches back to back
#     beside K CPU workers running queries back to back (no dispatcher),
#     1 s per K, under process-wide variants:
#       base      GOMAXPROCS 16 (all cores), the CUDA driver's default wait
#                 (spin), GOGC 100: K = 0, 8, 15 (a P free), 16
#       procs17   GOMAXPROCS=17 (a P free while 16 workers run): K = 16
#       blocking  QP_CUDA_SYNC=blocking (the owner thread sleeps in stream
#                 waits instead of spinning): K = 0, 16
#       yield     QP_CUDA_SYNC=yield: K = 16
#       gogc400   GOGC=400: K = 16
#       p17block  GOMAXPROCS=17 and QP_CUDA_SYNC=blocking: K = 16
#       nice10    --cpu-nice 10 (each CPU worker on its own thread at nice
#                 +10: the kernel runs the GPU side's threads first): K = 16
#       p20nice   GOMAXPROCS=20 and --cpu-nice 10 (Ps to spare, the
#                 kernel's priority decides): K = 16
#     Each K prints the CPU, GPU and total q/s, the GPU batch's wall time
#     split into prepare + hand-off to the CUDA thread + its closure [stream
#     waits, result conversion], the device time (CUDA events), the CUDA
#     thread's CPU time, run-queue delay (schedstat) and involuntary
#     switches per batch, and the Go runtime's GC cycles, assist CPU,
#     allocation rate, goroutine scheduling latency p50/p99/p99.9 and the
#     process's cores. Logs: $OUT/diag-MODE-VARIANT.log; summary
#     $OUT/diag.txt (one line per mode, variant, K).
#  2. the rate search (`qp bench sched`, deadline 200 ms, REPEATS (default
#     2) repeats with different arrivals, to 5%, at most RUNS (5) runs per
#     repeat) per mode of SMODES (default "and andor": the two modes where
#     GPU-first stayed below the better processor in the thirteenth
#     session): (a) base environment: cpu-only, gpu-only, cpu+gpu-first;
#     (b) the variant of step 1 with the highest K=16 total summed over the
#     modes (relative to base; VARIANT=NAME overrides): gpu-only,
#     cpu+gpu-first (cpu-only with --threads 16 too where GOMAXPROCS is
#     changed; --cpu-nice applies to the hybrid's CPU slots only). --gpu-profile: after every run, its GPU batches' host phases and
#     device time, GC and scheduling latency, and the gap from a batch's
#     return to the next batch's start. Logs $OUT/sched-MODE-ENV.log,
#     tables in $OUT/sched-MODE-ENV/README.md. SLIMIT (default 85) s per
#     process; a process is skipped once BUDGET (default 480) s have passed.
# Expected: step 1 ~100 s for three modes, step 2 ~80 s a process, about
# 7-8 minutes in all with the index built (~20 s unpacking).
# DIAG=0 or SEARCH=0 skips a step. COLL (default gcide: /tmp/COLL.qp, built
# from /tmp/COLL.jsonl), QUERIES, TRAIN, REPLAY, DEADLINE change the data
# (the CUDA emulator smoke test: COLL=sg20k TRAIN=100 REPLAY=100
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
    base) echo "" ;;
    procs17) echo "GOMAXPROCS=17" ;;
    blocking) echo "QP_CUDA_SYNC=blocking" ;;
    yield) echo "QP_CUDA_SYNC=yield" ;;
    gogc400) echo "GOGC=400" ;;
    p17block) echo "GOMAXPROCS=17 QP_CUDA_SYNC=blocking" ;;
    nice10) echo "" ;;
    p20nice) echo "GOMAXPROCS=20" ;;
  esac
}
# variant NAME -> extra flags (--cpu-nice: the CPU workers' threads at a
# raised nice value, so that the kernel runs the GPU side's threads first)
flagsof() {
  case $1 in
    nice10 | p20nice) echo "--cpu-nice 10" ;;
  esac
}

if [ "${DIAG:-1}" = 1 ]; then
  : >"$OUT/diag.txt"
  for m in ${MODES:-and or andor}; do
    for v in "base:0,8,15,16" "procs17:16" "blocking:0,16" "yield:16" "gogc400:16" "p17block:16" "nice10:16" "p20nice:16"; do
      name=${v%%:*} ks=${v#*:}
      log=$OUT/diag-$m-$name.log
      env $(envof "$name") timeout "${DLIMIT:-40}" "$bin/qp" bench sched "$idx" "$queries" "${common[@]}" --mode "$m" $(flagsof "$name") \
        --diagnose "$ks" --diagnose-for "${DIAGFOR:-1s}" >"$log" 2>&1 || echo "diag $m $name rc=$?"
      grep '^K=' "$log" | sed "s/^/$m $name /" >>"$OUT/diag.txt"
      # stdout (the call's 12,000-character tail): rates and the batch's split only
      grep -A1 '^K=' "$log" | sed -E -e "s/^K=([0-9]+) cpu workers: (cpu [0-9]+ q\/s), (gpu [0-9]+ q\/s), (total [0-9]+ q\/s).*/$m $name K=\1: \2 \3 \4/" \
        -e 's/^  gpu: /   /; s/ batches of /x/; s/ queries: wall /q wall /; s/\/query/\/q/g; s/ involuntary switches per batch/ invol\/batch/; s/owner thread /thread /; s/hand-off/handoff/' \
        | grep -v '^--'
    done
    echo "== diag $m at $(elapsed)"
  done
fi

# best variant: highest sum over modes of its K=16 total / base's K=16 total
if [ -z "${VARIANT:-}" ] && [ -s "$OUT/diag.txt" ]; then
  VARIANT=$(awk '$3=="K=16" { for (i=1;i<=NF;i++) if ($i=="total") { r=$(i+1); gsub(/[^0-9.]/,"",r); t[$1" "$2]=r; m[$1]=1; v[$2]=1 } }
    END { best="base"; bs=0; for (x in v) { s=0; for (y in m) s+=t[y" "x]/(t[y" base"]>0 ? t[y" base"] : 1); if (s>bs) { bs=s; best=x } } print best }' "$OUT/diag.txt")
  echo "== best variant at K=16: $VARIANT"
fi
VARIANT=${VARIANT:-blocking}

if [ "${SEARCH:-1}" = 1 ]; then
  for m in ${SMODES:-and andor}; do
    for e in base "$VARIANT"; do
      if [ $(( $(date +%s) - T0 )) -gt "${BUDGET:-480}" ]; then echo "== skipping sched $m $e: past ${BUDGET:-480}s"; continue; fi
      setups=cpu-only,gpu-only,cpu+gpu-first
      threads=()
      if [ "$e" != base ]; then
        setups=gpu-only,cpu+gpu-first
        case "$(envof "$e")" in *GOMAXPROCS=*) setups=cpu-only,gpu-only,cpu+gpu-first; threads=(--threads "$(nproc)") ;; esac
      fi
      env $(envof "$e") timeout "${SLIMIT:-85}" "$bin/qp" bench sched "$idx" "$queries" "${common[@]}" --mode "$m" \
        --rates "${RATES:-100000}" --min-duration 1s --search-runs "${RUNS:-5}" --search-repeats "${REPEATS:-2}" \
        --setups "$setups" "${threads[@]}" $(flagsof "$e") --gpu-profile --report "$OUT/sched-$m-$e" >"$OUT/sched-$m-$e.log" 2>&1
      echo "== sched $m $e ($(envof "$e")) rc=$? at $(elapsed)"
      sed -n '/highest sustained/,$p' "$OUT/sched-$m-$e.log"
      # the GPU-first runs around its highest sustained rate: split, batches, gaps
      grep -A3 '^  cpu+gpu-first at' "$OUT/sched-$m-$e.log" | grep -E '^  cpu\+gpu-first at|^    gpu [0-9]' | tail -4 | cut -c1-330
    done
  done
fi
