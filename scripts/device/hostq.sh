#!/usr/bin/env bash
# scripts/device/hostq.sh — issue 24, branch hostq: the host CPU a GPU query
# costs in `qp bench sched`, old (a main build, /tmp/qp-old) against new
# (this branch, bin/dev/qp), in one call of under 9 minutes:
#
# Part 1 (~3.5 min; no run starts past PART1 s, default 240): process
#   CPU per GPU query at fixed rates, gpu-only, `qp bench sched --setups
#   gpu-only --rates R --search-runs 0`, fresh processes interleaved A B A
#   B (PAIRS, default 2), for each item MODE:RATE:VARIANTS of SPECS
#   (default "and:2000000:old,new0,new,newb and:4000000:old,new,newb
#   or:1500000:old,new,newb": AND at hostcpu.sh's rate, where hostcpu4's
#   runs came in bursts of 6.2 arrivals, and near the GPU alone's
#   eleventh-round rate, where its search runs came in bursts of 31-64; OR
#   below the GPU alone's 1.9-2.4M, where the eleventh round's OR runs came
#   in bursts of 5-8 at every rate). Variants:
#     old   main's binary
#     new0  this branch with --submit-quantum 0 (a wake-up per arrival due,
#           as main): the other changes alone (records filled field by
#           field, jobs released by chunk runs, no Basis in the job, the
#           canonical order by insertion)
#     new   this branch with its defaults (--submit-quantum 50us)
#     newb  new with QP_CUDA_SYNC=blocking: the CUDA owner thread sleeps in
#           its stream waits instead of spinning (the driver's default
#           spins: a core per wait for the device time of every batch; in
#           the fourteenth session's probes blocking cost AND alone 16% of
#           its rate, with the owner then host-bound; gpuplan measured 2
#           of an OR batch's 2.6 ms of owner CPU in the spin)
#   The first pair's runs at the first AND rate write Go CPU profiles
#   (prof-V-and.pprof).
# Part 2 (~3 min, skipped past BUDGET s, default 250): the rate search of
#   scripts/device/sched4.sh for AND (cpu-only, gpu-only, cpu+gpu-first;
#   one repeat, RUNS 8), variants SEARCH (default "old new f:blk"; f:blk
#   is new's cpu+gpu-first with QP_CUDA_SYNC=blocking against new's CPU
#   and GPU alone): the GPU alone's sustained rate and CPU+GPU / the sum.
#
# Build (Go machine, repository root of the branch):
#   mkdir -p bin/dev/data && cp ../shared/data/queries/06.efficiency_topics.txt bin/dev/data/
#   CGO_ENABLED=0 go build -o /tmp/qp ./cmd/qp && xz -T0 -9 -c /tmp/qp >bin/dev/data/qp.xz
#   rm -rf /tmp/qp-main; git -C /work/main archive main | (mkdir -p /tmp/qp-main && tar -x -C /tmp/qp-main) &&
#     (cd /tmp/qp-main && CGO_ENABLED=0 go build -o /tmp/qp-old ./cmd/qp) &&
#     xz -T0 -9 -c /tmp/qp-old >bin/dev/data/qp-old.xz
#   xz -T0 -6 -c /tmp/lead/hold/gcide.qp >bin/dev/data/gcide.qp.xz
# then, carry ["bin/dev"]:
#   bash scripts/device/hostq.sh
#
# Output, under $OUT: hostq.txt (the summary below), all.tgz (every run's
# log and the profiles; split the profiles here with
# `bash scripts/profsplit.sh DIR/prof-*.pprof`). In hostq.txt:
#   "V MODE@RATE: rc=0 gpu-only at R q/s: ... process CPU X/query ..." per
#   run, with its "arrivals submitted in N bursts of M, L late on average"
#   (old's line has no lateness);
#   "ratio MODE@RATE: process CPU per query V/old, pairs: ...; mean r" per
#   spec and variant (issue 24 wants a GPU AND query's host CPU well under
#   ~1.8 µs: new/old ≤ ~0.75 on main's ~2-2.5 µs); new's bursts should be
#   ~100 arrivals at 2M q/s (old's ~6), its lateness ≤ ~60 µs;
#   newb against new says what the driver's spin costs per query;
#   then sched4's "ratio old and", "ratio new and" and "ratio f:blk and"
#   lines: cpu, gpu (the GPU alone's sustained rate: new above old if the
#   host bounded it), cpu+gpu, /sum (target ≥ 0.90) and /better.
source scripts/device/lib.sh
T0=$(date +%s)
rm -f /tmp/qp /tmp/qp-old
BIN=${BIN:-bin/dev} bash scripts/device/unpack.sh || exit 1
chmod +x /tmp/qp-old 2>/dev/null
[ -x /tmp/qp-old ] || { echo "no /tmp/qp-old (carry bin/dev/data/qp-old.xz)"; exit 1; }
coll=${COLL:-gcide}
idx=/tmp/$coll.qp
[ -s "$idx" ] || { echo "no $idx (carry bin/dev/data/$coll.qp.xz)"; exit 1; }
queries=$bin/data/06.efficiency_topics.txt
logs=/tmp/hostq-logs
rm -rf "$logs" && mkdir -p "$logs"
sum=$OUT/hostq.txt
echo "== $coll; $(nproc) cores; $(head -2 "$OUT/device.txt" | tail -1)" | tee "$sum"
profiled=
for spec in ${SPECS:-and:2000000:old,new0,new,newb and:4000000:old,new,newb or:1500000:old,new,newb}; do
  IFS=: read -r m rate vs <<<"$spec"
  variants=${vs//,/ }
  key="$m@$rate"
  for i in $(seq "${PAIRS:-2}"); do
    for v in $variants; do
      if [ $(( $(date +%s) - T0 )) -gt "${PART1:-240}" ]; then echo "== skipping $v $key $i: past ${PART1:-240}s" | tee -a "$sum"; continue; fi
      qp=$bin/qp flags=() envs=()
      case $v in
      old) qp=/tmp/qp-old ;;
      new0) flags=(--submit-quantum 0) ;;
      new) ;;
      newb) envs=(QP_CUDA_SYNC=blocking) ;;
      *) echo "unknown variant $v"; continue ;;
      esac
      prof=()
      if [ "$i" = 1 ] && [ "$m" = and ] && [ -z "$profiled" -o "$profiled" = "$rate" ]; then
        profiled=$rate prof=(--cpuprofile "$logs/prof-$v-$m.pprof")
      fi
      log=$logs/fixed-$v-$m-$rate-$i.log
      env "${envs[@]}" timeout 120 "$qp" bench sched "$idx" "$queries" --device gpu --mode "$m" --setups gpu-only \
        --rates "$rate" --search-runs 0 --deadline 200ms --train 1500 --replay 3000 \
        --min-duration "${DUR:-3s}" "${flags[@]}" "${prof[@]}" >"$log" 2>&1
      echo "$v $key: rc=$? $(grep -o 'gpu-only at .*' "$log" | head -1 | cut -c1-230)" | tee -a "$sum"
      grep -q 'arrivals submitted' "$log" && echo "  $v $key $(grep -o 'arrivals submitted .*' "$log" | tail -1)" | tee -a "$sum"
    done
  done
  for v in $variants; do
    [ "$v" = old ] && continue
    cpu_ratio "$key" "$v" "$sum"
  done
done
echo "== part 1 done at $(( $(date +%s) - T0 ))s" | tee -a "$sum"
if [ -n "${SEARCH-old new f:blk}" ] && [ $(( $(date +%s) - T0 )) -lt "${BUDGET:-250}" ]; then
  OUT=$logs/sched4 UNPACK=0 COLL=$coll MODES=and VARIANTS="${SEARCH:-old new f:blk}" VE_blk=QP_CUDA_SYNC=blocking \
    BUDGET=$(( 420 - ($(date +%s) - T0) )) VLIMIT=${VLIMIT:-100} bash scripts/device/sched4.sh >"$logs/sched4.out" 2>&1
  grep -h "^ratio\|^== \|skipping" "$logs/sched4/sched4-$coll.txt" "$logs/sched4.out" 2>/dev/null | sort -u | tee -a "$sum"
  sed -n '/highest sustained/,/^$/p' "$logs/sched4/sched4-$coll.txt" 2>/dev/null | cut -c1-150 >>"$sum"
else
  echo "== part 2 skipped (SEARCH empty or past ${BUDGET:-250}s)" | tee -a "$sum"
fi
tar czf "$OUT/all.tgz" -C "$logs" . 2>/dev/null
echo "== done at $(( $(date +%s) - T0 ))s" | tee -a "$sum"
ls -la "$OUT"
