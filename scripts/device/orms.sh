#!/usr/bin/env bash
# scripts/device/orms.sh — the GPU OR's MaxScore over the shortest list
# (Options.Or = "maxscore", engine/gpu/orms.go; issue #20 §4) against the
# tiles, on the GOV2-size topic-model index. One call, <= 9 minutes:
#   1. the tests it added or touched, on the GPU: kern.test TestLayout
#      (the AND step parameter structs grew), gpu.test TestOrMaxScore*,
#      TestAndSearches, TestOrCorruptBlocks;
#   2. /tmp/g25m.qp (reused on a warm machine, else gen25m.sh, ~4.6 min);
#   3. `qp bench query --device gpu --gpu-only --profile`, first 10,000
#      TREC 2006 queries, top-10, modes MODES (default or,andor):
#      old binary (/tmp/qp-old: main before this branch, carried as
#      bin/dev/data/qp-old.xz; skipped when absent) with the tiles, then the
#      new one with --gpu-or tiled,maxscore, ROUNDS times (default 2; 1
#      when this call generated the index), alternating; a run that would
#      start past BUDGET seconds (default 480) is skipped;
#   4. with /tmp/gcide.qp, the same old/new rows on GCIDE (OR only).
# Prepare here: bash scripts/device/build.sh; xz -T2 -c <old qp> >
# bin/dev/data/qp-old.xz (optional); the binaries xz'd as unpack.sh wants;
# optionally a GCIDE index as bin/dev/data/gcide.qp.xz (step 4).
# On the device, carry bin/dev:
#   bash scripts/device/unpack.sh; bash scripts/device/orms.sh
# Output under $OUT: tests.log, gen-summary.txt (when it generated),
# bench-{old,new}-R.log, gcide-{old,new}.log; stdout: test verdicts, each row (q/s, p50/p95/p99
# batch latency), the time split and the OR counters (tiles accumulated;
# "OR MaxScore ...: N queries routed, M answered").
source scripts/device/lib.sh
t0=$(date +%s)
chmod +x "$bin"/*.test "$bin/qp" 2>/dev/null
(cd cuda/kern && timeout 60 "$bin/kern.test" -test.run '^TestLayout' -test.count=1 -test.v) >"$OUT/tests.log" 2>&1
echo "kern TestLayout: rc $?"
(cd engine/gpu && timeout 150 "$bin/gpu.test" -test.run '^(TestOrMaxScore|TestAndSearches|TestOrCorruptBlocks)' -test.count=1 -test.v) >>"$OUT/tests.log" 2>&1
echo "gpu tests: rc $?"
grep -E '^(--- FAIL|FAIL|ok|PASS)' "$OUT/tests.log" | head -20
rounds=${ROUNDS:-2}
if [ -s /tmp/g25m.qp ] && [ "${REGEN:-0}" != 1 ]; then echo "reusing /tmp/g25m.qp (warm machine)"; else
  GENLIMIT=${GENLIMIT:-330} bash scripts/device/gen25m.sh >"$OUT/gen-summary.txt" 2>&1
  head -3 "$OUT/gen-summary.txt"
  rounds=${ROUNDS:-1} # gen took most of the call
fi
[ -s /tmp/g25m.qp ] || { echo "no index"; exit 1; }
head -10000 "$bin/data/06.efficiency_topics.txt" >/tmp/q06.txt
old=0
[ -x /tmp/qp-old ] || chmod +x /tmp/qp-old 2>/dev/null && [ -x /tmp/qp-old ] && old=1
for r in $(seq 1 "$rounds"); do
  for v in old new; do
    if [ $(( $(date +%s) - t0 )) -gt "${BUDGET:-480}" ]; then echo "time budget spent: $v round $r skipped"; continue; fi
    if [ $v = old ]; then
      [ $old = 1 ] || continue
      b=/tmp/qp-old; ors=tiled
    else
      b=$bin/qp; ors=tiled,maxscore
    fi
    timeout "${RUNLIMIT:-90}" "$b" bench query /tmp/g25m.qp /tmp/q06.txt --device gpu --gpu-only --profile \
      --modes "${MODES:-or,andor}" --gpu-or "$ors" >"$OUT/bench-$v-$r.log" 2>&1
    echo "== $v round $r (--gpu-or $ors, rc $?)"
    grep -vE '^(index|$)' "$OUT/bench-$v-$r.log" | head -40
  done
done
# Optional: GCIDE (carry bin/dev/data/gcide.qp.xz; unpack.sh puts it in
# /tmp/gcide.qp), where the tiles may stay the faster: the same A/B, or only.
if [ -s /tmp/gcide.qp ]; then
  for v in old new; do
    if [ $(( $(date +%s) - t0 )) -gt "${BUDGET:-480}" ]; then echo "time budget spent: gcide $v skipped"; continue; fi
    b=$bin/qp; ors=tiled,maxscore
    if [ $v = old ]; then [ $old = 1 ] || continue; b=/tmp/qp-old; ors=tiled; fi
    timeout 60 "$b" bench query /tmp/gcide.qp /tmp/q06.txt --device gpu --gpu-only --profile --modes or \
      --gpu-or "$ors" >"$OUT/gcide-$v.log" 2>&1
    echo "== gcide $v (--gpu-or $ors, rc $?)"
    grep -vE '^(index|$)' "$OUT/gcide-$v.log" | head -20
  done
fi
