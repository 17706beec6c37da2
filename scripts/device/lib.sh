# scripts/device/lib.sh — the common start of the device scripts, sourced
# from the repository root: OUT (default /tmp/out) exists, bin is the
# absolute path of the binaries (scripts/device/build.sh: $BIN or bin/dev),
# QP_QUERIES names its TREC query logs (for the Go tests), and
# $OUT/device.txt holds the GPU as nvidia-smi describes it.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
bin=$PWD/${BIN:-bin/dev}
export QP_QUERIES=$bin/data
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv \
  >"$OUT/device.txt" 2>&1
