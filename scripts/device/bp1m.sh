#!/usr/bin/env bash
# scripts/device/bp1m.sh — issue #22's target on the topic-model collection:
# BP reordering (`qp reorder`) at DOCS documents (default 1M) must cut bits
# per docID by >= 25% against random order (the gen default). Generates the
# collection in random order and with --locality, reorders the first, and
# re-encodes all three with bp128 and pfordelta (`qp stats --codecs`).
# One call, a few minutes on 16 cores. Prepare as for gen25m.sh (bin/dev);
# on the device: bash scripts/device/unpack.sh; bash scripts/device/bp1m.sh
# Writes under $OUT: gen-random.log, gen-locality.log, reorder.log (with
# /usr/bin/time -v where present) and stats-{random,bp,locality}.txt, and
# prints the bits per docID.
source scripts/device/lib.sh
DOCS=${DOCS:-1000000}
qs=(--queries "$bin/data/05.efficiency_topics.txt" --queries "$bin/data/06.efficiency_topics.txt")
tv=""
[ -x /usr/bin/time ] && tv="/usr/bin/time -v"
rm -f /tmp/bp-random.qp /tmp/bp-bp.qp /tmp/bp-locality.qp
t=$(date +%s)
$tv "$bin/qp" gen --docs "$DOCS" --out /tmp/bp-random.qp --quiet "${qs[@]}" >"$OUT/gen-random.log" 2>&1 || { echo "gen failed"; tail -3 "$OUT/gen-random.log"; exit 1; }
echo "gen random: $(( $(date +%s) - t ))s"
t=$(date +%s)
timeout 400 $tv "$bin/qp" reorder /tmp/bp-random.qp /tmp/bp-bp.qp --quiet >"$OUT/reorder.log" 2>&1 || { echo "reorder failed"; tail -3 "$OUT/reorder.log"; }
echo "reorder: $(( $(date +%s) - t ))s"
t=$(date +%s)
"$bin/qp" gen --docs "$DOCS" --locality --out /tmp/bp-locality.qp --quiet "${qs[@]}" >"$OUT/gen-locality.log" 2>&1 || echo "gen --locality failed"
echo "gen locality: $(( $(date +%s) - t ))s"
for v in random bp locality; do
  [ -s /tmp/bp-$v.qp ] || continue
  "$bin/qp" stats /tmp/bp-$v.qp --codecs bp128,pfordelta >"$OUT/stats-$v.txt" 2>&1
  echo "== $v"; grep -E 'docid order|bits/docID|bp128  |pfordelta  ' "$OUT/stats-$v.txt"
done
rm -f /tmp/bp-random.qp /tmp/bp-bp.qp /tmp/bp-locality.qp
