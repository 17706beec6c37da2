#!/usr/bin/env bash
# scripts/device/coop.sh — issue 24, twelfth round (branch coop): the GPU's
# host phases in CPU+GPU with the CPU slots helping them (--cpu-help, the
# default) and without, at one fixed arrival rate per mode, A B C A B C:
# `qp bench sched --setups cpu+gpu-first --rates RATE --search-runs 0
# --gpu-profile`, one process per run (its own training). Variants
# (VARIANTS, default "help nohelp spawn"):
#   help    this branch's defaults: CPU slots run chunks of the GPU's open
#           host work between two queries (scheduler.Config.Assist)
#   nohelp  --cpu-help=false: the slots only yield (runtime.Gosched), the
#           host work still on internal/assist's Board (caller + woken
#           parked workers)
#   spawn   --cpu-help=false with QP_HOST_ASSIST=off: the host work fans
#           out on goroutines of its own, as on main before the Board
#   galone  gpu-only (the GPU alone) on the Board, and gspawn gpu-only with
#           QP_HOST_ASSIST=off: what the Board itself does to the GPU
#           alone's host phases (not in the default VARIANTS; at the same
#           RATE, which the GPU alone keeps up with on GCIDE)
#
#   COLL=gcide (default) or rfc-pages: the index carried as for sched4.sh
#   MODES="and or andor" (default); RATE overrides the rate of every mode
#   (default per mode: and 2500000, or 1300000, andor 1200000: 0.75-0.85
#   of the lowest CPU+GPU sustained rates on GCIDE in the eleventh round,
#   so that every variant keeps up and the host phases compare at one
#   load); ROUNDS=2; DUR=2s (the run's arrivals); IDX overrides
#   /tmp/COLL.qp; BUDGET=400 (s: no run starts after it; each run is at
#   most 120 s, about 10 s expected)
#
# Output: $OUT/coop-COLL.txt: per run "V MODE: <progress line>" (sustained,
# mean and p99 delay, process CPU per query), its "gpu N batches of M
# queries, busy X%" line and its --gpu-profile line (per batch: wall =
# prepare + plan + ... + convert; device time); then per mode and variant
# the mean of the batches' queries, prepare, plan and convert. Read:
# help's prepare/convert per batch against nohelp's and spawn's, and the
# GPU's batch sizes (CPU+GPU's shrank to 5.8-9.2k from the GPU alone's
# 13.4k in the eleventh round).
#
# Build (Go machine, repository root of the branch):
#   mkdir -p bin/dev/data && cp ../shared/data/queries/06.efficiency_topics.txt bin/dev/data/
#   CGO_ENABLED=0 go build -o /tmp/qp ./cmd/qp && xz -T0 -9 -c /tmp/qp >bin/dev/data/qp.xz
#   xz -T0 -6 -c /tmp/lead/hold/gcide.qp >bin/dev/data/gcide.qp.xz
# then, carry ["bin/dev"]:
#   COLL=gcide bash scripts/device/coop.sh
source scripts/device/lib.sh
if [ "${UNPACK:-1}" = 1 ]; then
  [ -e "$bin/data/qp.xz" ] && rm -f /tmp/qp
  BIN=${BIN:-bin/dev} bash scripts/device/unpack.sh || exit 1
fi
coll=${COLL:-gcide}
idx=${IDX:-/tmp/$coll.qp}
[ -s "$idx" ] || { echo "no $idx (carry bin/dev/data/$coll.qp.xz)"; exit 1; }
queries=${QUERIES:-$bin/data/06.efficiency_topics.txt}
sum=$OUT/coop-$coll.txt
: >"$sum"
T0=$(date +%s)
echo "== $coll; $(nproc) cores; $(head -2 "$OUT/device.txt" | tail -1)" | tee -a "$sum"
for m in ${MODES:-and or andor}; do
  case $m in and) rate=${RATE:-2500000} ;; or) rate=${RATE:-1300000} ;; *) rate=${RATE:-1200000} ;; esac
  for i in $(seq "${ROUNDS:-2}"); do
    for v in ${VARIANTS:-help nohelp spawn}; do
      if [ $(( $(date +%s) - T0 )) -gt "${BUDGET:-400}" ]; then echo "== skipping $v $m $i: past ${BUDGET:-400}s" | tee -a "$sum"; continue; fi
      flags=() envs=() setup=cpu+gpu-first
      case $v in
      help) ;;
      nohelp) flags=(--cpu-help=false) ;;
      spawn) flags=(--cpu-help=false) envs=(QP_HOST_ASSIST=off) ;;
      galone) setup=gpu-only ;;
      gspawn) setup=gpu-only envs=(QP_HOST_ASSIST=off) ;;
      *) echo "unknown variant $v"; continue ;;
      esac
      log=$OUT/coop-$coll-$v-$m-$i.log
      env "${envs[@]}" timeout 120 "$bin/qp" bench sched "$idx" "$queries" --device gpu --mode "$m" \
        --setups "$setup" --rates "$rate" --search-runs 0 --deadline 200ms --train 1500 --replay 3000 \
        --min-duration "${DUR:-2s}" --gpu-profile "${flags[@]}" >"$log" 2>&1
      echo "$v $m: rc=$? $(grep -o "$setup at .*" "$log" | head -1 | cut -c1-260)" | tee -a "$sum"
      echo "  $v $m $(grep -o 'gpu [0-9]* batches of .*' "$log" | head -1)" | tee -a "$sum"
      echo "  $v $m $(grep -o 'gpu: [0-9]* batches .*' "$log" | tail -1 | cut -c1-400)" | tee -a "$sum"
    done
  done
  # Means over the rounds of each variant's profile line: queries per
  # batch, prepare, plan and convert per batch (in µs).
  awk -v m="$m" '
    function us(x) { f = 1; if (x ~ /ms$/) f = 1000; else if (x ~ /ns$/) f = 0.001; else if (x ~ /[0-9]s$/) f = 1e6
      gsub(/[^0-9.]/, "", x); return x * f }
    $2 == m && $3 == "gpu:" { v = $1; n[v]++
      for (i = 4; i <= NF; i++) {
        if ($i == "of" && $(i+2) == "queries:") q[v] += $(i+1)
        if ($i == "prepare") p[v] += us($(i+1))
        if ($i == "(plan") { x = $(i+1); sub(/\)/, "", x); pl[v] += us(x) }
        if ($i == "convert") { x = $(i+1); sub(/,/, "", x); c[v] += us(x) }
      } }
    END { for (v in n) printf "mean %s %s over %d runs: %.0f queries/batch, prepare %.1f µs, plan %.1f µs, convert %.1f µs per batch\n",
      v, m, n[v], q[v]/n[v], p[v]/n[v], pl[v]/n[v], c[v]/n[v] }' "$sum" | tee -a "$sum"
done
tar czf /tmp/coop-all.tgz -C "$OUT" . && mv /tmp/coop-all.tgz "$OUT/all.tgz"
find "$OUT" -mindepth 1 -maxdepth 1 ! -name all.tgz ! -name device.txt ! -name "coop-$coll.txt" -exec rm -rf {} +
ls -la "$OUT"
