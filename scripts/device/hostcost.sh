#!/usr/bin/env bash
# scripts/device/hostcost.sh — where a GPU batch's host time goes, by batch
# size (issues 20, 24, 25: the fixed cost per batch bounds the server's
# latency, the hybrid's GPU share and the small collections' GPU rate).
# For GCIDE (/tmp/gcide.qp, carried xz'd as bin/dev/data/gcide.qp.xz) and,
# with G10M=1, the 10M-document topic-model gen index (/tmp/g10m.qp, built
# by lib.sh's gen10m): `qp bench query --gpu-only --profile` on the first
# N TREC'06 queries as ONE batch (thresholds far above any batch) for N in
# $SIZES, modes $MODES; a Go CPU profile of the run at $PROF_N queries.
# Writes $OUT/hc-COLL-MODE-N.txt (rows and the profiled batch's split:
# launches, syncs, host prepare/run/sync/convert, owner CPU, device) and
# $OUT/hc-COLL-MODE-N.pb.
. scripts/device/lib.sh
q=$bin/data/06.efficiency_topics.txt
run() { # coll index
  for mode in ${MODES:-and or}; do
    for n in ${SIZES:-256 1024 4096 10000}; do
      prof=""; [ "$n" = "${PROF_N:-4096}" ] && prof="--cpuprofile $OUT/hc-$1-$mode-$n.pb"
      timeout 240 "$bin/qp" bench query "$2" "$q" --limit "$n" --device gpu --gpu-only --modes "$mode" \
        --profile --gpu-threshold 64G --gpu-or-threshold 64G $prof >"$OUT/hc-$1-$mode-$n.txt" 2>&1
      echo "== $1 $mode $n rc=$?"; grep -E "^$mode |launch|host|owner|device" "$OUT/hc-$1-$mode-$n.txt" | head -12
    done
  done
}
[ -s /tmp/gcide.qp ] && run gcide /tmp/gcide.qp
if [ "${G10M:-0}" = 1 ]; then MODEL=topics gen10m && run g10m /tmp/g10m.qp; fi
