#!/bin/bash
# Old-vs-new single-thread CPU engine comparison by process CPU time
# (docs/CPU-ENGINE.md). Builds scripts/cpuab against two checkouts and runs
# them interleaved (old new old new ...), GOMAXPROCS=1.
#
#   scripts/cpuab/ab.sh OLD_CHECKOUT NEW_CHECKOUT INDEX OR_QUERIES AND_QUERIES [ROUNDS] [PASSES]
#
# OR (maxscore, bmw) runs OR_QUERIES, AND (skip) those of AND_QUERIES whose
# terms all exist in the index (cpuab filters them; the same log as
# OR_QUERIES is fine). NEW is built
# with NEW/cmd/qp/default.pgo when it exists (as go build ./cmd/qp does).
# Prints per algorithm the CPU microseconds per query of every round, the
# speedup old/new of the geometric means and of the minima, and whether the
# result hashes are identical.
set -eu
[ $# -ge 5 ] || { echo "usage: $0 OLD_CHECKOUT NEW_CHECKOUT INDEX OR_QUERIES AND_QUERIES [ROUNDS] [PASSES]" >&2; exit 2; }
OLD=$(realpath "$1"); NEW=$(realpath "$2"); IDX=$3; QOR=$4; QAND=$5; R=${6:-3}; P=${7:-3}
for f in "$IDX" "$QOR" "$QAND"; do [ -r "$f" ] || { echo "$0: cannot read $f" >&2; exit 2; }; done
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
build() { # build CHECKOUT OUT
	mkdir -p "$W/m-$2" && cp "$NEW/scripts/cpuab/main.go" "$W/m-$2/"
	printf 'module cpuab\n\ngo 1.26\n\nrequire github.com/qpengine/qp v0.0.0\n\nreplace github.com/qpengine/qp => %s\n' "$1" > "$W/m-$2/go.mod"
	cp "$NEW/go.sum" "$W/m-$2/"
	local pgo=""; [ "$2" = new ] && [ -f "$NEW/cmd/qp/default.pgo" ] && pgo="-pgo=$NEW/cmd/qp/default.pgo"
	(cd "$W/m-$2" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build $pgo -o "$W/$2" .)
}
build "$OLD" old; build "$NEW" new
for r in $(seq 1 "$R"); do
	for who in old new; do
		for job in "or maxscore $QOR" "or bmw $QOR" "and skip $QAND"; do
			set -- $job
			echo "$r $who $1-$2 $(GOMAXPROCS=1 "$W/$who" "$IDX" "$3" "$1" "$2" "$P")"
		done
	done
done | awk '{q[$3,$2]=q[$3,$2]" "$4; s[$3,$2]+=log($4); n[$3,$2]++; a[$3]=1; h[$3,$2]=$6
	if (!(($3,$2) in mn) || $4<mn[$3,$2]) mn[$3,$2]=$4}
END{for(k in a){go=exp(s[k,"old"]/n[k,"old"]); gn=exp(s[k,"new"]/n[k,"new"])
	printf "%-13s cpu us/query old%s | new%s | speedup geo-mean %.2f, min %.2f | results %s\n", k, q[k,"old"], q[k,"new"], go/gn, mn[k,"old"]/mn[k,"new"], (h[k,"old"]==h[k,"new"]?"identical":"DIFFER")}}' | sort
