#!/usr/bin/env bash
# scripts/device/serve.sh — issue #25's proof on the GPU machine: qp serve
# under load on loopback (qp bench serve: vegeta in the same process), GPU
# and 16 CPU cores, on the gen index of 10M documents (lib.sh's gen10m: the
# independent model, built in under 200 s; the topic model, the "new gen
# model", takes 90 s at 2M documents and does not fit one call at 10M:
# MODEL=topics DOCS=2000000 REGEN=1 runs it at 2M) with the TREC 2006
# efficiency queries, AND and OR, top-10. Each level lasts DUR (default
# 6s): saturation with 1 and 100 queries per request, 25/50/80% of the
# one-query saturation rate, 10,000 connections; plus the in-process batch
# throughput of the same backend (qp.Stream, best of 3) it is compared with.
# Budget: gen 10M about 100-200 s (reused on a warm machine), then about
# 4 x 50 s of load (each run killed at 90 s): 6-7 minutes, under 8 cold.
#
# Run (after scripts/device/build.sh here; carry bin/dev):
#   bash scripts/device/unpack.sh; bash scripts/device/serve.sh
# Output: $OUT/serve-{gpu,cpu}-{and,or}.txt (the table) and .json (rows),
# $OUT/gen.log, $OUT/device.txt.
source scripts/device/lib.sh
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
echo "open files: $(ulimit -n)"
gen10m || exit 1
q=$bin/data/06.efficiency_topics.txt
for m in and or; do
  for dev in gpu cpu; do
    timeout 90 "$bin/qp" bench serve /tmp/g10m.qp "$q" --device $dev --mode $m --limit 50000 \
      --duration "${DUR:-6s}" --json "$OUT/serve-$dev-$m.json" >"$OUT/serve-$dev-$m.txt" 2>&1
    echo "== $dev $m (exit $?)"; tail -12 "$OUT/serve-$dev-$m.txt"
  done
done
