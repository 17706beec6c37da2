#!/bin/bash
# Paired old-vs-new comparison of the single-thread CPU engine in ONE
# process (scripts/cpuab/pair/main.go; docs/CPU-ENGINE.md, "How it was
# measured"): both builds run the same chunks of queries alternately, so a
# loaded machine disturbs them alike, which ab.sh's separate processes,
# seconds apart, do not guarantee.
#
#   scripts/cpuab/pair.sh OLD_CHECKOUT INDEX QUERIES MODE ALGO PASSES [CHUNK]
#
# OLD_CHECKOUT is copied with its module path rewritten to qpold (its
# engine must have the API scripts/cpuab uses: Options, Query, Search);
# the new build is this checkout. Each copy is built with its own
# cmd/qp/default.pgo when it has one (pgodup merges the two profiles, the
# old one's functions renamed). GOMAXPROCS=1. PAIR_BIN=FILE keeps the
# built harness (then rerun it directly: FILE INDEX QUERIES MODE ALGO PASSES);
# with PAIR_BUILD_ONLY=1 as well it only builds (INDEX and QUERIES may then
# be any readable files, /dev/null).
# PAIR_OLD_INDEX=FILE: the old build reads FILE instead of INDEX (each build
# its own index of the same documents; the new one reads INDEX).
# Prints one line: per-query minima of old and new (µs/query), old/new,
# every pass's mean, and whether all top-10 lists are identical.
set -eu
[ $# -ge 6 ] || { echo "usage: $0 OLD_CHECKOUT INDEX QUERIES MODE ALGO PASSES [CHUNK]" >&2; exit 2; }
OLD=$(realpath "$1"); NEW=$(realpath "$(dirname "$0")/../..")
for f in "$2" "$3" ${PAIR_OLD_INDEX:-}; do [ -r "$f" ] || { echo "$0: cannot read $f" >&2; exit 2; }; done
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
mkdir -p "$W/old" "$W/tools/pgodup/profile" "$W/h"
(cd "$OLD" && tar cf - --exclude=.git --exclude=bin --exclude=cuda .) | (cd "$W/old" && tar xf -)
find "$W/old" -name '*.go' -print0 | xargs -0 sed -i 's#"github.com/qpengine/qp/#"qpold/#g; s#"github.com/qpengine/qp"#"qpold"#g'
sed -i 's#^module github.com/qpengine/qp$#module qpold#' "$W/old/go.mod"
prof=$(go env GOROOT)/src/cmd/vendor/github.com/google/pprof/profile
cp "$prof"/*.go "$W/tools/pgodup/profile/" && rm -f "$W"/tools/pgodup/profile/*_test.go
cp "$NEW/scripts/cpuab/pair/pgodup/main.go" "$W/tools/pgodup/"
printf 'module qppair\n\ngo 1.26\n' >"$W/tools/go.mod"
(cd "$W/tools" && CGO_ENABLED=0 go build -o "$W/pgodup" ./pgodup)
pgo=""
if [ -f "$NEW/cmd/qp/default.pgo" ]; then
	op=-; [ -f "$OLD/cmd/qp/default.pgo" ] && op=$OLD/cmd/qp/default.pgo
	"$W/pgodup" "$NEW/cmd/qp/default.pgo" "$op" "$W/merged.pgo" && pgo=-pgo=$W/merged.pgo
fi
cp "$NEW/scripts/cpuab/pair/main.go" "$NEW/go.sum" "$W/h/"
printf 'module qppair\n\ngo 1.26\n\nrequire (\n\tgithub.com/qpengine/qp v0.0.0\n\tqpold v0.0.0\n)\n\nreplace github.com/qpengine/qp => %s\n\nreplace qpold => %s\n' "$NEW" "$W/old" >"$W/h/go.mod"
(cd "$W/h" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build $pgo -o "$W/pair" .)
[ -n "${PAIR_BIN:-}" ] && cp "$W/pair" "$PAIR_BIN"
[ -n "${PAIR_BUILD_ONLY:-}" ] && exit 0
shift
GOMAXPROCS=1 "$W/pair" "$@"
