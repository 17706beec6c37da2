#!/usr/bin/env bash
# scripts/device/build.sh — builds, on the Go machine, everything the device
# scripts (scripts/device/*.sh) run on the GPU machine, into bin/dev (an
# ignored folder: name it in the device tool's `carry`):
#   bin/dev/qp         the qp command (CGO_ENABLED=0)
#   bin/dev/cuda.test  the cuda package's (driver binding) tests
#   bin/dev/kern.test  the cuda/kern package's (kernel launchers) tests
#   bin/dev/gpu.test   the engine/gpu package's tests and benchmarks
#   bin/dev/data/      the TREC 2005/2006 efficiency query logs
# The kernels are the committed cuda/kernels.fatbin (`make kernels` first
# after changing cuda/kernels/*.cu).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${BIN:-bin/dev}
queries=${QP_QUERIES:-../shared/data/queries}
mkdir -p "$out/data"
cp "$queries"/0[56].efficiency_topics.txt "$out/data/"
export CGO_ENABLED=0
go build -o "$out/qp" ./cmd/qp
go test -c -o "$out/cuda.test" ./cuda
go test -c -o "$out/kern.test" ./cuda/kern
go test -c -o "$out/gpu.test" ./engine/gpu
du -sh "$out"
