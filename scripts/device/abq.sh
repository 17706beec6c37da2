#!/usr/bin/env bash
# scripts/device/abq.sh — same-run A/B of two qp binaries' `qp bench query`
# on the GOV2-size topic-model index: gen25m.sh builds /tmp/g25m.qp (DOCS,
# default 25M; ~4.6 min on 16 cores), then for ROUNDS (default 2) rounds the
# old (/tmp/qp-old, carried as bin/dev/data/qp-old.xz) and new (bin/dev/qp)
# binary alternate: first 10,000 TREC 2006 queries, top-10, GPU only,
# MODES (default and,andor), --profile (time split). Every run's results are
# checked identical within a binary by bench query; across binaries the
# results/query column must agree.
# On the device: bash scripts/device/unpack.sh; bash scripts/device/abq.sh
# Output: gen25m.sh's files, $OUT/ab-{old,new}-R.log, a summary on stdout.
source scripts/device/lib.sh
if [ -s /tmp/g25m.qp ] && [ "${REGEN:-0}" != 1 ]; then echo "reusing /tmp/g25m.qp (warm machine)"; else
GENLIMIT=${GENLIMIT:-360} bash scripts/device/gen25m.sh >"$OUT/gen-summary.txt" 2>&1
fi
[ -s /tmp/g25m.qp ] || { echo "no index"; cat "$OUT/gen-summary.txt"; exit 1; }
head -3 "$OUT/gen-summary.txt"
head -10000 "$bin/data/06.efficiency_topics.txt" >/tmp/q06.txt
chmod +x /tmp/qp-old 2>/dev/null || { echo "no /tmp/qp-old (carry bin/dev/data/qp-old.xz)"; exit 1; }
for r in $(seq 1 "${ROUNDS:-2}"); do
  for v in old new; do
    b=$bin/qp; [ $v = old ] && b=/tmp/qp-old
    timeout "${RUNLIMIT:-100}" "$b" bench query /tmp/g25m.qp /tmp/q06.txt --device gpu --gpu-only --profile \
      --modes "${MODES:-and,andor}" >"$OUT/ab-$v-$r.log" 2>&1
    echo "== $v round $r (rc $?)"
    grep -E '^(mode|and|or|andor) ' "$OUT/ab-$v-$r.log" | sort -u
  done
done
