#!/usr/bin/env bash
# scripts/device/gen25m.sh — issue #20 part 1: times `qp gen --model topics`
# at GOV2's size (DOCS, default 25M documents) on the GPU machine's 16 cores,
# with the peak memory of the process (VmHWM, sampled every 2 s) and the
# spill folder's size, then `qp stats` of the index. One call (≤ 10 min):
# gen is cut at GENLIMIT seconds (default 450).
#
# Prepare here: bash scripts/device/build.sh (bin/dev/qp and the TREC logs
# in bin/dev/data); if the binaries exceed what a call carries, xz them
# into bin/dev/data (scripts/device/unpack.sh). On the device, carry bin/dev:
#   bash scripts/device/unpack.sh; bash scripts/device/gen25m.sh
# Writes under $OUT: gen.log (qp gen's output and progress), mem.txt (the
# VmHWM/VmRSS/RssAnon/RssFile samples: RssFile is the mapped runs), stats.txt (qp stats of the index), df.txt, and
# prints the summary. The index stays in /tmp/g25m.qp for a follow-up call
# on the same warm machine (KEEP=0 removes it).
source scripts/device/lib.sh
DOCS=${DOCS:-25000000}
idx=/tmp/g25m.qp
rm -f "$idx"
df -h /tmp >"$OUT/df.txt"
grep -E 'MemTotal|MemAvailable' /proc/meminfo >>"$OUT/df.txt"
t=$(date +%s)
timeout "${GENLIMIT:-450}" "$bin/qp" gen --model topics --docs "$DOCS" --out "$idx" --mem "${MEM:-40G}" \
  --queries "$bin/data/05.efficiency_topics.txt" --queries "$bin/data/06.efficiency_topics.txt" >"$OUT/gen.log" 2>&1 &
pid=$!
sleep 1
qpid=$(pgrep -P $pid qp || echo $pid)
while kill -0 $pid 2>/dev/null; do
  { echo "$(date +%s) $(grep -E 'VmHWM|VmRSS|RssAnon|RssFile' /proc/$qpid/status 2>/dev/null | tr -s ' \n' ' ') spill=$(du -sh /tmp/qp-build-* 2>/dev/null | cut -f1 | tr '\n' ' ')"; } >>"$OUT/mem.txt"
  sleep 2
done
wait $pid
rc=$?
el=$(( $(date +%s) - t ))
echo "== qp gen --docs $DOCS: rc $rc, ${el}s wall, $(nproc) cores"
tail -1 "$OUT/mem.txt"
grep -v '^\s*$' "$OUT/gen.log" | tr '\r' '\n' | grep -E '^(model|  fitted|generated)' | cut -c1-400
if [ $rc = 0 ]; then
  ls -l "$idx"
  timeout 90 "$bin/qp" stats "$idx" >"$OUT/stats.txt" 2>&1
  head -30 "$OUT/stats.txt"
fi
df -h /tmp >>"$OUT/df.txt"
[ "${KEEP:-1}" = 1 ] || rm -f "$idx"
