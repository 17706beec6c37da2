#!/usr/bin/env bash
# scripts/device/hostcpu.sh — issue 24, sixth round (branch hostcpu): the
# host CPU a GPU query costs, old (main's binary, /tmp/qp-old) against new
# (this branch, $bin/qp), at one fixed arrival rate per mode, A B A B:
# `qp bench sched --setups gpu-only --rates RATE --search-runs 0` with a Go
# CPU profile of each process and --gpu-profile. The slab change moves the
# harness's page faults out of the measured window, so "process CPU
# .../query" of the runs is the figure to compare (and the profiles' split).
#
#   COLL=gcide (default) or rfc-pages: the index carried as for sched4.sh
#   MODES="and or" (default); RATE (default per mode: and 2000000, or
#   700000, andor 500000: about 0.7-0.8 of GPU alone's fifth-round rates on
#   GCIDE); PAIRS=2; DUR=3s; IDX and OLD override /tmp/COLL.qp and
#   /tmp/qp-old
#
# Output: $OUT/hostcpu-COLL.txt: per run "V MODE: <progress line>" (its
# "process CPU X/query"), then per mode the new/old ratio of each pair and
# their mean;
# the profiles $OUT/prof-V-MODE-I.pprof (read them with
# `go tool pprof BINARY FILE` against the same binary: /tmp/qp-old is
# main's, bin/dev/data/qp.xz this branch's).
#
# Second part (branch hostcpu2): old is a build of the hostcpu branch
# (b45bcc1), new this branch's; the same runs and output.
#
# Third part (branch hostcpu3, issue 24's seventh round): old = main, new =
# this branch; VARIANTS="old mid new" adds a third build, $MID (default
# /tmp/qp-mid, carried as bin/dev/data/qp-mid.xz): branch hostcpu3-noti,
# this branch without the prepared terms' termInfo copies (the one change
# the 2-core machine could not measure), so that new/mid is that step.
# Each run's "runtime:" line (GCs, GC CPU, allocation rate, scheduling
# latency) goes into the summary too, and the progress line's "(gc
# X/query, N GCs)" is the collector inside the measured window.
#
# Fourth part (branch hostcpu4, issue 24's eighth round): old = main, new =
# this branch (job chunks shared by consecutive bursts and cleared only
# where used); the same runs and output. The new profiles carry the label
# qp=window on the work inside the measured window: split them on the Go
# machine with `bash scripts/profsplit.sh DIR/prof-*.pprof` (outside the
# window / harness / scheduler / backend / other; old's profiles are split
# by function names instead). New's runs also print "arrivals submitted in
# N bursts of M" (the replay's SubmitBatch calls). Build as below, without
# mid; then
#   COLL=gcide PAIRS=3 bash scripts/device/hostcpu.sh
#
# Build (Go machine, repository root of the branch):
#   mkdir -p bin/dev/data && cp ../shared/data/queries/06.efficiency_topics.txt bin/dev/data/
#   CGO_ENABLED=0 go build -o /tmp/qp ./cmd/qp && xz -T0 -9 -c /tmp/qp >bin/dev/data/qp.xz
#   rm -rf /tmp/qp-main /tmp/qp-midsrc; git -C /work/main archive main | (mkdir -p /tmp/qp-main && tar -x -C /tmp/qp-main) &&
#     (cd /tmp/qp-main && CGO_ENABLED=0 go build -o /tmp/qp-old ./cmd/qp) &&
#     xz -T0 -9 -c /tmp/qp-old >bin/dev/data/qp-old.xz
#   (mid, optional) git -C /work/main archive hostcpu3-noti | (mkdir -p /tmp/qp-midsrc && tar -x -C /tmp/qp-midsrc) &&
#     (cd /tmp/qp-midsrc && CGO_ENABLED=0 go build -o /tmp/qp-mid ./cmd/qp) &&
#     xz -T0 -9 -c /tmp/qp-mid >bin/dev/data/qp-mid.xz
#   xz -T0 -6 -c /tmp/lead/hold/gcide.qp >bin/dev/data/gcide.qp.xz
# then, carry ["bin/dev"]:
#   COLL=gcide PAIRS=3 VARIANTS="old mid new" bash scripts/device/hostcpu.sh
source scripts/device/lib.sh
if [ "${UNPACK:-1}" = 1 ]; then
  [ -e "$bin/data/qp.xz" ] && rm -f /tmp/qp
  [ -e "$bin/data/qp-old.xz" ] && rm -f /tmp/qp-old
  [ -e "$bin/data/qp-mid.xz" ] && rm -f /tmp/qp-mid
  BIN=${BIN:-bin/dev} bash scripts/device/unpack.sh || exit 1
fi
old=${OLD:-/tmp/qp-old}
[ -x "$old" ] || chmod +x "$old" 2>/dev/null
[ -x "$old" ] || { echo "no $old (carry bin/dev/data/qp-old.xz)"; exit 1; }
mid=${MID:-/tmp/qp-mid}
variants=${VARIANTS:-old new}
case " $variants " in *" mid "*)
  [ -x "$mid" ] || chmod +x "$mid" 2>/dev/null
  [ -x "$mid" ] || { echo "no $mid (carry bin/dev/data/qp-mid.xz)"; exit 1; } ;;
esac
coll=${COLL:-gcide}
idx=${IDX:-/tmp/$coll.qp}
[ -s "$idx" ] || { echo "no $idx (carry bin/dev/data/$coll.qp.xz)"; exit 1; }
queries=${QUERIES:-$bin/data/06.efficiency_topics.txt}
sum=$OUT/hostcpu-$coll.txt
: >"$sum"
echo "== $coll; $(nproc) cores; $(head -2 "$OUT/device.txt" | tail -1)" | tee -a "$sum"
for m in ${MODES:-and or}; do
  case $m in and) rate=${RATE:-2000000} ;; or) rate=${RATE:-700000} ;; *) rate=${RATE:-500000} ;; esac
  for i in $(seq "${PAIRS:-2}"); do
    for v in $variants; do
      qp=$bin/qp
      [ "$v" = old ] && qp=$old
      [ "$v" = mid ] && qp=$mid
      log=$OUT/hostcpu-$coll-$v-$m-$i.log
      timeout 120 "$qp" bench sched "$idx" "$queries" --device gpu --mode "$m" --setups gpu-only \
        --rates "$rate" --search-runs 0 --deadline 200ms --train 1500 --replay 3000 \
        --min-duration "${DUR:-3s}" --cpuprofile "$OUT/prof-$v-$m-$i.pprof" --gpu-profile >"$log" 2>&1
      echo "$v $m: rc=$? $(grep -o 'gpu-only at .*' "$log" | head -1 | cut -c1-220)" | tee -a "$sum"
      echo "  $v $m $(grep -o 'runtime: .*' "$log" | tail -1)" | tee -a "$sum"
      grep -q 'arrivals submitted' "$log" && echo "  $v $m $(grep -o 'arrivals submitted .*' "$log" | tail -1)" | tee -a "$sum"
    done
  done
  for v in $variants; do
    [ "$v" = old ] && continue
    cpu_ratio "$m" "$v" "$sum"
  done
done
ls -la "$OUT"
