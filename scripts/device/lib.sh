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

# gen_index IDX LIMIT FLAG...: builds IDX by `qp gen FLAG...` with the
# TREC 2005/2006 query terms within LIMIT seconds, unless a warm machine
# kept it (REGEN=1 rebuilds it); into IDX.tmp first, so that a failed or
# cut run leaves no index behind; log in $OUT/gen.log.
gen_index() {
  local idx=$1 limit=$2 t
  shift 2
  if [ -s "$idx" ] && [ "${REGEN:-0}" != 1 ]; then echo "reusing $idx"; return 0; fi
  t=$(date +%s)
  timeout "$limit" "$bin/qp" gen "$@" --out "$idx.tmp" --quiet --queries "$bin/data/05.efficiency_topics.txt" \
    --queries "$bin/data/06.efficiency_topics.txt" >"$OUT/gen.log" 2>&1 ||
    { echo "gen failed or ran past $limit s"; tail -5 "$OUT/gen.log"; rm -f "$idx.tmp"; return 1; }
  mv "$idx.tmp" "$idx"
  echo "gen: $(( $(date +%s) - t ))s: $(tail -1 "$OUT/gen.log")"
}

# gen10m builds /tmp/g10m.qp, the GOV2-like gen index of ${DOCS:-10M}
# documents (MODEL, default independent; issue #4's index).
gen10m() { gen_index /tmp/g10m.qp 200 --model "${MODEL:-independent}" --docs "${DOCS:-10000000}"; }

# gen10m_topics builds /tmp/g10m-topics.qp, the topic-model gen index of
# ${DOCS:-10M} documents (builder memory ${MEM:-40G}; ~3-5 min on 16 cores).
gen10m_topics() {
  gen_index /tmp/g10m-topics.qp 330 --model topics --docs "${DOCS:-10000000}" --mem "${MEM:-40G}"
}
