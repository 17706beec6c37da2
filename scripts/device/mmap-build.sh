#!/usr/bin/env bash
# scripts/device/mmap-build.sh — on the Go machine, after scripts/device/build.sh:
# adds what scripts/device/mmap.sh needs to bin/dev:
#   bin/dev/openbench             scripts/openbench of this checkout
#   bin/dev/data/qp-base.xz         qp of BASE, a commit whose index.Open still reads the
#   bin/dev/data/openbench-base.xz  file into the heap (default 3c8c5f7, main before issue
#                                   21's mmap), and scripts/openbench built against it
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${BIN:-bin/dev}
base=${BASE:-3c8c5f7}
export CGO_ENABLED=0
go build -o "$out/openbench" ./scripts/openbench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$base" | tar -x -C "$tmp"
mkdir -p "$tmp/scripts/openbench" "$out/data"
cp scripts/openbench/main.go "$tmp/scripts/openbench/"
(cd "$tmp" && go build -o qp-base ./cmd/qp && go build -o openbench-base ./scripts/openbench)
xz -T0 -3 -c "$tmp/qp-base" >"$out/data/qp-base.xz"
xz -T0 -3 -c "$tmp/openbench-base" >"$out/data/openbench-base.xz"
echo "base $base"; du -sh "$out"
