#!/usr/bin/env bash
# scripts/device/cpuab.sh — issue #23 on the GPU machine's CPU: the
# single-thread CPU engine of two builds side by side by process CPU time
# (scripts/cpuab: GOMAXPROCS=1, rounds interleaved old/new, best of PASSES
# timed passes after a warm-up that hashes every top-10 list), as
# scripts/cpuab/ab.sh does on the dev machine (docs/CPU-ENGINE.md).
#
# Prepare on the Go machine (carry bin/cpuab, ~44 MiB with both indexes):
#   scripts/device/cpuab.sh --prepare OLD_CHECKOUT GCIDE_INDEX RFCPAGES_INDEX
# which builds scripts/cpuab against OLD_CHECKOUT (b3d41c3) and against this
# checkout (with cmd/qp/default.pgo), and xz-compresses both binaries and the
# two indexes (built with qp index --stem english --stopwords english) into
# bin/cpuab with the TREC 2006 efficiency log. A call carries at most 64
# MiB: check du's figure (the RFC pages index of docs/CPU-ENGINE.md, 70 MB,
# is 28 MiB xz'd; GCIDE's 23 MB about 9); with RFCPAGES_INDEX "-" only GCIDE
# travels (then run with COLLS=gcide).
#
# Further builds, to measure intermediate steps side by side: append
# NAME=CHECKOUT arguments to --prepare (each built as "new" is, with its own
# cmd/qp/default.pgo when it has one); they run between old and new in every
# round.
#
# Each build its own index (as PISA comparisons let each engine read its own
# index of the same documents): OLD_CHECKOUT and any NAME=CHECKOUT may be
# written CHECKOUT:GCIDE_INDEX:RFCPAGES_INDEX ("-" for one of them: that
# collection's shared index); that build then reads its own files, the
# others GCIDE_INDEX and RFCPAGES_INDEX. A build's own index travels as a
# delta against the shared one (scripts/cpuab/idxdelta; b3d41c3's and
# today's index of the same documents differ in the bitmap lists' encoding
# and the offsets past them: ~1.5 MiB xz'd for RFC pages, against 30 MiB
# for the whole file), so three builds with two index files of both
# collections fit one call.
#
# On the device: COLLS (default "gcide rfc-pages"), ROUNDS (3), PASSES (3),
# JOBS (default "or:maxscore or:bmw and:skip"), QMIN=1 (time by the sum of
# per-query minimum wall times over the passes instead of the best pass's
# CPU time: scripts/cpuab's QB_QMIN), PROF=1 (after the rounds, one more run
# of the new build per collection and job writing a Go CPU profile,
# $OUT/prof-COLL-JOB.pb, symbolized: go tool pprof -top FILE).
# Output: $OUT/cpuab.txt (one line per run: collection round build job
# us/query wall-us/query hash), $OUT/summary.txt (per collection and job,
# per build: the rounds, the geometric mean, the speedup over old of the
# geometric means and of the minima, and whether the hashes equal old's),
# $OUT/cpu.txt (lscpu, load). Runtime about 2-4 minutes per collection and
# pair of builds (ROUNDS=3 PASSES=2 keeps both collections within one
# 9-minute call for two builds; with more builds use JOBS or COLLS).
set -u
d=$PWD/bin/cpuab
if [ "${1:-}" = --prepare ]; then
  set -e
  [ $# -ge 4 ] || { echo "usage: $0 --prepare OLD_CHECKOUT[:GIDX:RIDX] GCIDE_INDEX RFCPAGES_INDEX [NAME=CHECKOUT[:GIDX:RIDX] ...]" >&2; exit 2; }
  old=$2; new=$PWD; w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
  gidx=$3; ridx=$4; shift 4
  rm -rf "$d"; mkdir -p "$d"
  CGO_ENABLED=0 go build -o "$w/idxdelta" ./scripts/cpuab/idxdelta
  for spec in "old=$old" "new=$new" "$@"; do
    who=${spec%%=*}; src=${spec#*=}; pgo=""
    case $who in ''|*[!a-z0-9]*) echo "$0: build name '$who': want [a-z0-9]+" >&2; exit 2 ;; esac
    own=""; case $src in *:*) own=${src#*:}; src=${src%%:*} ;; esac
    src=$(realpath "$src")
    if [ -n "$own" ]; then # this build's own index files, as deltas against the shared ones
      case $own in *:*) ;; *) echo "$0: $spec: want NAME=CHECKOUT:GCIDE_INDEX:RFCPAGES_INDEX" >&2; exit 2 ;; esac
      for ci in "gcide:$gidx:${own%%:*}" "rfc-pages:$ridx:${own#*:}"; do
        IFS=: read -r c base mine <<<"$ci"
        [ "$mine" = - ] && continue
        [ "$base" != - ] || { echo "$0: $spec: no shared $c index to take a delta against" >&2; exit 2; }
        "$w/idxdelta" diff "$base" "$mine" "$w/$c-$who.qpd" && xz -T2 -c "$w/$c-$who.qpd" >"$d/$c-$who.qpd.xz"
      done
      xz -T2 -c "$w/idxdelta" >"$d/idxdelta.xz"
    fi
    [ $who != old ] && [ -f "$src/cmd/qp/default.pgo" ] && pgo="-pgo=$src/cmd/qp/default.pgo"
    mkdir -p "$w/$who" && cp scripts/cpuab/main.go go.sum "$w/$who/"
    printf 'module cpuab\n\ngo 1.26\n\nrequire github.com/qpengine/qp v0.0.0\n\nreplace github.com/qpengine/qp => %s\n' "$src" >"$w/$who/go.mod"
    (cd "$w/$who" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build $pgo -o "$w/cpuab-$who" .)
    xz -T2 -c "$w/cpuab-$who" >"$d/cpuab-$who.xz"
    [ $who = old ] || [ $who = new ] || echo "$who" >>"$d/builds.txt"
  done
  pack() { # pack INDEX NAME: INDEX.xz beside INDEX (not older) is taken as is
    if [ -s "$1.xz" ] && [ ! "$1.xz" -ot "$1" ]; then cp "$1.xz" "$d/$2.qp.xz"; else xz -T2 -c "$1" >"$d/$2.qp.xz"; fi
  }
  pack "$gidx" gcide
  [ "$ridx" = - ] || pack "$ridx" rfc-pages # "-": GCIDE only (COLLS=gcide)
  cp "${QP_QUERIES:-../shared/data/queries}/06.efficiency_topics.txt" "$d/"
  du -sh "$d"
  exit 0
fi
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
rm -f /tmp/*.qpd /tmp/own-*.qp # a warm machine's earlier bundle
for f in "$d"/*.xz; do
  b=$(basename "$f" .xz)
  case $b in cpuab-*|idxdelta|*.qpd) rm -f "/tmp/$b" ;; esac # builds change between calls, indexes seldom
  [ -s "/tmp/$b" ] || xz -d -c "$f" >"/tmp/$b" || exit 1
done
builds="old $(cat "$d/builds.txt" 2>/dev/null) new"
for who in $builds; do chmod +x "/tmp/cpuab-$who"; done
{ lscpu; uptime; } >"$OUT/cpu.txt" 2>&1
for p in /tmp/*.qpd; do # builds with their own index: rebuilt from the shared one
  [ -e "$p" ] || continue
  b=$(basename "$p" .qpd); chmod +x /tmp/idxdelta
  /tmp/idxdelta apply "/tmp/${b%-*}.qp" "$p" "/tmp/own-$b.qp" || exit 1
  echo "${b##*-} reads its own ${b%-*} index ($(stat -c %s "/tmp/own-$b.qp") bytes)" | tee -a "$OUT/cpu.txt"
done
# idx COLL WHO: the index file that build reads
idx() { if [ -s "/tmp/own-$1-$2.qp" ]; then echo "/tmp/own-$1-$2.qp"; else echo "/tmp/$1.qp"; fi; }
head -10000 "$d/06.efficiency_topics.txt" >/tmp/q10k.txt
res=$OUT/cpuab.txt
: >"$res"
rc=0
qmin=""; [ "${QMIN:-}" = 1 ] && qmin=1
for c in ${COLLS:-gcide rfc-pages}; do
  for r in $(seq 1 "${ROUNDS:-3}"); do
    for who in $builds; do
      for job in ${JOBS:-or:maxscore or:bmw and:skip}; do
        m=${job%%:*}; a=${job#*:}
        line=$(QB_QMIN=$qmin GOMAXPROCS=1 timeout 300 "/tmp/cpuab-$who" "$(idx "$c" "$who")" /tmp/q10k.txt "$m" "$a" "${PASSES:-3}") || rc=1
        echo "$c $r $who $m-$a $line" | tee -a "$res"
      done
    done
  done
  if [ "${PROF:-}" = 1 ]; then
    for job in ${JOBS:-or:maxscore or:bmw and:skip}; do
      m=${job%%:*}; a=${job#*:}; rm -f "$OUT/prof-$c-$m-$a.pb"
      QB_PROF="$OUT/prof-$c-$m-$a.pb" GOMAXPROCS=1 timeout 300 /tmp/cpuab-new "$(idx "$c" new)" /tmp/q10k.txt "$m" "$a" "${PASSES:-3}" >/dev/null || rc=1
    done
  fi
done
awk -v builds="$builds" '{k=$1" "$4; q[k,$3]=q[k,$3]" "$5; s[k,$3]+=log($5); n[k,$3]++; a[k]=1; h[k,$3]=$7
	if (!((k,$3) in mn) || $5<mn[k,$3]) mn[k,$3]=$5}
END{nb=split(builds, B, " "); for(k in a){go=exp(s[k,"old"]/n[k,"old"])
	line=sprintf("%-22s old%s geo %.2f", k, q[k,"old"], go)
	for(i=2;i<=nb;i++){b=B[i]; if(!((k,b) in n)) continue; g=exp(s[k,b]/n[k,b])
		line=line sprintf(" | %s%s geo %.2f: speedup geo-mean %.2f, min %.2f, results %s", b, q[k,b], g, go/g, mn[k,"old"]/mn[k,b], (h[k,b]==h[k,"old"]?"identical":"DIFFER"))}
	print line}}' "$res" | sort | tee "$OUT/summary.txt"
exit $rc
