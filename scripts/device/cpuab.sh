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
# On the device: COLLS (default "gcide rfc-pages"), ROUNDS (3), PASSES (3).
# Output: $OUT/cpuab.txt (one line per run: round build job cpu-us/query
# wall-us/query hash), $OUT/summary.txt (per collection and job: the rounds,
# speedup of the geometric means and of the minima, whether the hashes
# agree), $OUT/cpu.txt (lscpu, load). Runtime about 2-4 minutes per collection
# (ROUNDS=3 PASSES=2 keeps both collections within one 9-minute call).
set -u
d=$PWD/bin/cpuab
if [ "${1:-}" = --prepare ]; then
  set -e
  [ $# -eq 4 ] || { echo "usage: $0 --prepare OLD_CHECKOUT GCIDE_INDEX RFCPAGES_INDEX" >&2; exit 2; }
  old=$(realpath "$2"); new=$PWD; w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
  mkdir -p "$d"
  for who in old new; do
    src=$old; pgo=""; [ $who = new ] && { src=$new; pgo="-pgo=$new/cmd/qp/default.pgo"; }
    mkdir -p "$w/$who" && cp scripts/cpuab/main.go go.sum "$w/$who/"
    printf 'module cpuab\n\ngo 1.26\n\nrequire github.com/qpengine/qp v0.0.0\n\nreplace github.com/qpengine/qp => %s\n' "$src" >"$w/$who/go.mod"
    (cd "$w/$who" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build $pgo -o "$w/cpuab-$who" .)
    xz -T2 -c "$w/cpuab-$who" >"$d/cpuab-$who.xz"
  done
  xz -T2 -c "$3" >"$d/gcide.qp.xz"
  [ "$4" = - ] || xz -T2 -c "$4" >"$d/rfc-pages.qp.xz" # "-": GCIDE only (COLLS=gcide)
  cp "${QP_QUERIES:-../shared/data/queries}/06.efficiency_topics.txt" "$d/"
  du -sh "$d"
  exit 0
fi
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
for f in "$d"/*.xz; do
  b=$(basename "$f" .xz)
  [ -s "/tmp/$b" ] || xz -d -c "$f" >"/tmp/$b" || exit 1
done
chmod +x /tmp/cpuab-old /tmp/cpuab-new
{ lscpu; uptime; } >"$OUT/cpu.txt" 2>&1
head -10000 "$d/06.efficiency_topics.txt" >/tmp/q10k.txt
res=$OUT/cpuab.txt
: >"$res"
rc=0
for c in ${COLLS:-gcide rfc-pages}; do
  for r in $(seq 1 "${ROUNDS:-3}"); do
    for who in old new; do
      for job in "or maxscore" "or bmw" "and skip"; do
        set -- $job
        line=$(GOMAXPROCS=1 timeout 300 "/tmp/cpuab-$who" "/tmp/$c.qp" /tmp/q10k.txt "$1" "$2" "${PASSES:-3}") || rc=1
        echo "$c $r $who $1-$2 $line" | tee -a "$res"
      done
    done
  done
done
awk '{k=$1" "$4; q[k,$3]=q[k,$3]" "$5; s[k,$3]+=log($5); n[k,$3]++; a[k]=1; h[k,$3]=$7
	if (!((k,$3) in mn) || $5<mn[k,$3]) mn[k,$3]=$5}
END{for(k in a){go=exp(s[k,"old"]/n[k,"old"]); gn=exp(s[k,"new"]/n[k,"new"])
	printf "%-22s cpu us/query old%s | new%s | speedup geo-mean %.2f, min %.2f | results %s\n", k, q[k,"old"], q[k,"new"], go/gn, mn[k,"old"]/mn[k,"new"], (h[k,"old"]==h[k,"new"]?"identical":"DIFFER")}}' "$res" | sort | tee "$OUT/summary.txt"
exit $rc
