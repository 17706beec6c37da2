#!/usr/bin/env bash
# scripts/device/bitmap.sh — bitmap posting lists (issue #6, CPU part + GPU
# hook): the engine/gpu tests on an index with every list stored as a roaring
# bitmap (uploaded through index.BlockCodedList), then the whole engine/gpu
# suite, then the CPU crossover measurement `qp bench bitmap` on the 16-core
# machine.
# Build first (on the dev machine, from the repository root):
#   CGO_ENABLED=0 go test -c -o bin/dev/gpu.test ./engine/gpu
#   CGO_ENABLED=0 go build -o bin/dev/qp ./cmd/qp
set -u
mkdir -p "$OUT"
B=${BIN:-bin/dev}
"$B/gpu.test" -test.run 'TestBitmapLists' -test.count=1 -test.v >"$OUT/gpu-bitmap.log" 2>&1
echo "gpu bitmap test rc=$?"; tail -5 "$OUT/gpu-bitmap.log"
timeout 120 "$B/gpu.test" -test.count=1 -test.short >"$OUT/gpu-all.log" 2>&1
echo "gpu suite rc=$?"; tail -5 "$OUT/gpu-all.log"
cd "$OUT" && timeout 90 "$OLDPWD/$B/qp" bench bitmap --min-time 100ms --csv bitmap.csv --svg bitmap.svg >bench-bitmap.log 2>&1
echo "bench rc=$?"; tail -30 bench-bitmap.log
