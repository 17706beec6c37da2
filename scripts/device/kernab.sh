#!/usr/bin/env bash
# scripts/device/kernab.sh — issue #21's kernel launchers (cuda/kern: a
# typed Go struct per kernel) against main before the move: first every GPU
# test of this build (scripts/device/tests.sh: cuda, cuda/kern with the
# Go/CUDA layout probe, engine/gpu), then `qp bench query` of the old binary
# (/tmp/qp-old), optionally main's (/tmp/qp-main) and the new one (bin/dev/qp),
# GPU only, modes and, or, andor, top-10, the first $QUERIES (default
# 10,000) TREC 2006 efficiency queries, on a topic-model gen index of $DOCS
# (default 2M) documents (the 05 and 06 log terms; built here, reused on a
# warm machine), ROUNDS (default 2) rounds, the binaries interleaved (old
# [main] new, old [main] new). Output: $OUT/kernab.txt (one line per run:
# q/s and p99 per mode), the bench and test logs. 2M documents: about 5-7
# minutes (tests 3, gen 1-2, benches 1-2); 10M (LIMIT=150 DOCS=10000000):
# about 8-9 minutes, one call.
#
# Build on the Go machine first (about 50 MiB in all, under a call's 64):
#   bash scripts/device/build.sh                       # bin/dev: qp, cuda/kern/gpu tests, query logs
#   git worktree add --detach /tmp/qp-old-src fc1d7af  # main before the launchers moved (run 8's old)
#   (cd /tmp/qp-old-src && CGO_ENABLED=0 go build -o /tmp/qp-old.bin ./cmd/qp)
#   xz -T0 -c /tmp/qp-old.bin >bin/dev/data/qp-old.xz
#   # optional, a third binary (e.g. main before a fix):
#   #   git worktree add --detach /tmp/qp-main-src main && (cd /tmp/qp-main-src &&
#   #   CGO_ENABLED=0 go build -o /tmp/qp-main.bin ./cmd/qp) && xz -T0 -c /tmp/qp-main.bin >bin/dev/data/qp-main.xz
# carry bin/dev, and run: bash scripts/device/unpack.sh && LIMIT=150 DOCS=10000000 bash scripts/device/kernab.sh
source scripts/device/lib.sh
old=/tmp/qp-old
[ -s "$old" ] || { echo "no $old (bin/dev/data/qp-old.xz, then scripts/device/unpack.sh)"; exit 1; }
chmod +x "$old"
rc=0
if [ "${TESTS:-1}" = 1 ]; then LIMIT=${LIMIT:-200} bash scripts/device/tests.sh || rc=1; fi
docs=${DOCS:-2000000}
idx=/tmp/g$((docs / 1000000))m-topics.qp
gen_index "$idx" "${GENLIMIT:-200}" --model topics --docs "$docs" || exit 1
q=/tmp/q06-kernab.txt
head -"${QUERIES:-10000}" "$bin/data/06.efficiency_topics.txt" >"$q"
res=$OUT/kernab.txt
: >"$res"
for r in $(seq "${ROUNDS:-2}"); do
  for v in old main new; do
    b=$bin/qp
    case $v in
    old) b=$old ;;
    main) [ -s /tmp/qp-main ] || continue; b=/tmp/qp-main; chmod +x "$b" ;;
    esac
    log=$OUT/bench-$v-$r.txt
    timeout 120 "$b" bench query "$idx" "$q" --device gpu --gpu-only --modes and,or,andor >"$log" 2>&1 || rc=1
    echo "r$r $v: $(awk '($1=="and"||$1=="or"||$1=="andor") && $2=="gpu"{printf "%s %s q/s p99 %s ms; ", $1, $4, $8}' "$log")" | tee -a "$res"
  done
done
exit $rc
