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

# gen10m builds /tmp/g10m.qp, the GOV2-like gen index of ${DOCS:-10M}
# documents with the TREC 2005/2006 query terms (issue #4's index), unless
# a warm machine kept it (REGEN=1 rebuilds it); log in $OUT/gen.log.
gen10m() {
  if [ -s /tmp/g10m.qp ] && [ "${REGEN:-0}" != 1 ]; then echo "reusing /tmp/g10m.qp"; return 0; fi
  local t=$(date +%s)
  timeout 200 "$bin/qp" gen --model "${MODEL:-independent}" --docs "${DOCS:-10000000}" --out /tmp/g10m.qp --quiet --queries "$bin/data/05.efficiency_topics.txt" \
    --queries "$bin/data/06.efficiency_topics.txt" >"$OUT/gen.log" 2>&1 || { echo "gen failed"; tail -5 "$OUT/gen.log"; return 1; }
  echo "gen: $(( $(date +%s) - t ))s: $(tail -1 "$OUT/gen.log")"
}
