#!/usr/bin/env bash
# scripts/device/pairab.sh — issue #23 on the GPU machine's CPU, paired:
# scripts/cpuab/pair.sh's one-process harness (two builds in one binary,
# chunks of 500 queries alternating between them, every query timed, the
# per-query minima over the passes summed per build; docs/CPU-ENGINE.md,
# "How it was measured") instead of cpuab.sh's separate processes, whose
# rounds of b3d41c3 spread up to 1.5x on the Xeon (docs/GPU-TESTS.md,
# twentieth session, run 1). On the loaded 2-core dev machine pair.sh's A/A
# stays within about ±3%.
#
# Prepare on the Go machine, after scripts/device/cpuab.sh --prepare (its
# bin/cpuab gives the indexes, the own-index deltas and idxdelta):
#   scripts/device/pairab.sh --prepare NAME=CHECKOUT [NAME=CHECKOUT ...]
# builds one harness per NAME, that checkout as old and this checkout as
# new (scripts/cpuab/pair.sh with PAIR_BIN), and packs them xz'd with the
# files of bin/cpuab into bin/pairab (~45 MiB with two harnesses; carry
# bin/pairab alone). A NAME for which bin/cpuab carries its own index
# (cpuab.sh's CHECKOUT:GCIDE_INDEX:RFCPAGES_INDEX builds, b3d41c3 as "old")
# reads it here too (PAIR_OLD_INDEX); use the same NAME as there.
#
# On the device: COLLS (default "rfc-pages gcide"), JOBS (default
# "and:skip or:maxscore"), PASSES_AND (8) and PASSES_OR (3), the passes
# the dev machine's runs use. Output: $OUT/pairab.txt, one line per
# collection, job and NAME: "COLL JOB NAME/new" and pair's line (per-query
# minima of old and new in µs/query, old/new, every pass's mean, whether
# every top-10 list is identical); $OUT/cpu.txt (lscpu, load). A run of
# old = b3d41c3 over RFC pages MaxScore takes about 10 000 × 3 × 0.33 ms
# = 10 s on the Xeon; both collections, two jobs and two harnesses about
# 1-2 minutes.
set -u
d=$PWD/bin/pairab
if [ "${1:-}" = --prepare ]; then
  set -e
  [ $# -ge 2 ] || { echo "usage: $0 --prepare NAME=CHECKOUT [NAME=CHECKOUT ...]" >&2; exit 2; }
  shift
  c=$PWD/bin/cpuab
  [ -s "$c/gcide.qp.xz" ] || { echo "$0: no $c/gcide.qp.xz: run scripts/device/cpuab.sh --prepare first" >&2; exit 2; }
  rm -rf "$d"; mkdir -p "$d"
  for f in "$c"/*.qp.xz "$c"/*.qpd.xz "$c"/idxdelta.xz; do
    [ -e "$f" ] && cp "$f" "$d/"
  done
  xz -T2 -c "$c/06.efficiency_topics.txt" >"$d/06.efficiency_topics.txt.xz"
  w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
  for spec in "$@"; do
    who=${spec%%=*}; src=${spec#*=}
    case $who in ''|*[!a-z0-9]*) echo "$0: build name '$who': want [a-z0-9]+" >&2; exit 2 ;; esac
    [ -d "$src" ] || { echo "$0: $spec: no checkout $src" >&2; exit 2; }
    PAIR_BIN="$w/pair-$who" PAIR_BUILD_ONLY=1 bash scripts/cpuab/pair.sh "$src" /dev/null /dev/null and skip 1
    xz -T2 -c "$w/pair-$who" >"$d/pair-$who.xz"
    echo "$who" >>"$d/builds.txt"
  done
  du -sh "$d"
  exit 0
fi
[ -s "$d/builds.txt" ] || { echo "$0: no $d/builds.txt: run --prepare on the Go machine and carry bin/pairab" >&2; exit 2; }
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
T=${PAIRAB_TMP:-/tmp/pairab}
mkdir -p "$T"
rm -f "$T"/pair-* "$T"/*.qpd "$T"/own-*.qp # builds change between calls, indexes seldom
for f in "$d"/*.xz; do
  b=$(basename "$f" .xz)
  [ -s "$T/$b" ] || xz -d -c "$f" >"$T/$b" || exit 1
done
chmod +x "$T"/pair-*
{ lscpu; uptime; } >"$OUT/cpu.txt" 2>&1
for p in "$T"/*.qpd; do # builds with their own index: rebuilt from the shared one
  [ -e "$p" ] || continue
  b=$(basename "$p" .qpd); chmod +x "$T/idxdelta"
  "$T/idxdelta" apply "$T/${b%-*}.qp" "$p" "$T/own-$b.qp" || exit 1
  echo "${b##*-} reads its own ${b%-*} index ($(stat -c %s "$T/own-$b.qp") bytes)" | tee -a "$OUT/cpu.txt"
done
head -10000 "$T/06.efficiency_topics.txt" >"$T/q10k.txt"
res=$OUT/pairab.txt
: >"$res"
rc=0
for c in ${COLLS:-rfc-pages gcide}; do
  [ -s "$T/$c.qp" ] || { echo "$0: no $c index in the bundle" >&2; rc=1; continue; }
  for job in ${JOBS:-and:skip or:maxscore}; do
    m=${job%%:*}; a=${job#*:}
    p=${PASSES_OR:-3}; [ "$m" = and ] && p=${PASSES_AND:-8}
    for who in $(cat "$d/builds.txt"); do
      own=""; [ -s "$T/own-$c-$who.qp" ] && own=$T/own-$c-$who.qp
      line=$(PAIR_OLD_INDEX=$own GOMAXPROCS=1 timeout 500 "$T/pair-$who" "$T/$c.qp" "$T/q10k.txt" "$m" "$a" "$p" 2>&1) || rc=1
      echo "$c $m-$a $who/new $line" | tee -a "$res"
    done
  done
done
exit $rc
