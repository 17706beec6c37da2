#!/usr/bin/env bash
# scripts/device/orsparse.sh — issue 20 §4, branch orsparse: the fused OR
# tiles with the lists of fewer blocks than tiles decoded once per launch
# (qp_ortile_predecode; docs/GPU-QUERY.md "OR tiles: sparse lists decoded
# once") against main's qp, in ONE call:
#
#   1. builds the topic-model gen index of ${DOCS:-10M} documents (lib.sh
#      gen10m_topics, random docID order; ~180 s on 16 cores at 10M);
#   2. on it, `qp bench query IDX q06 --limit 10000 --device gpu --gpu-only
#      --modes or,andor --profile` for old (main's qp), new with the
#      pre-pass off (QP_GPU_OR_PRE=0: the old path in the new binary) and
#      new, interleaved for ${ROUNDS:-2} rounds;
#   3. the same on GCIDE (bin/dev/data/gcide.qp.xz) when carried, 100,000
#      queries (the first 10,000 x 10), ${ROUNDS:-2} rounds;
#   4. the OR and AND+OR results of old and new (and off with HASH_OFF=1;
#      `qp query --device gpu --queries q06 --limit 10000 --run`, TREC run
#      files) compared by sha256: the same documents, ranks and printed
#      scores.
# Steps past BUDGET seconds (default 480) from the start are skipped.
#
# Carry bin/dev (build on the Go machine, repository root of this branch):
#   make kernels                      # (already committed)
#   bash scripts/device/build.sh && rm -f bin/dev/*.test bin/dev/data/*.xz
#   (cd /work/main && CGO_ENABLED=0 go build -o /tmp/qp-old ./cmd/qp)
#   xz -T2 -c /tmp/qp-old >bin/dev/data/qp-old.xz
#   xz -T2 -c bin/dev/qp >bin/dev/data/qp-new.xz && rm bin/dev/qp
#   xz -T2 -c /tmp/lead/hold/gcide.qp >bin/dev/data/gcide.qp.xz   # optional: GCIDE
# Run: bash scripts/device/unpack.sh; bash scripts/device/orsparse.sh
#   (DOCS=25000000 for the 25M index: ~300-420 s of gen, then ROUNDS=1.)
#
# Output under $OUT: orsparse.txt (per run: q/s, p99, the GPU time split,
# the tile / block / pre-decode work lines; the result hashes), and the
# full bench outputs orsparse-NAME-VARIANT-rROUND.txt, tarred into
# $OUT/orsparse.tgz.
# Environment: DOCS, ROUNDS (default 2), NQ (default 10000: the first NQ
# TREC'06 queries), REPS (default 10: GCIDE's queries NQ x REPS); NAME
# (default orsparse: the output's names) and OFF_ENV (default
# QP_GPU_OR_PRE=0: the environment of the "off" variant) for the other
# A/Bs of the OR tiles in one binary (ortouch.sh).
source scripts/device/lib.sh
name=${NAME:-orsparse}
off_env=${OFF_ENV:-QP_GPU_OR_PRE=0}
d=$bin/data
for b in old new; do
  # (always: a warm machine may hold another session's binaries)
  xz -d -T4 -c "$d/qp-$b.xz" >"/tmp/qp-$b" || { echo "no $d/qp-$b.xz"; exit 1; }
  chmod +x "/tmp/qp-$b"
done
# gen_index uses $bin/qp: the new binary.
mkdir -p "$bin" && cp /tmp/qp-new "$bin/qp"
t0=$(date +%s)
res=$OUT/$name.txt # (in $OUT as it grows: a cut call still returns it)
: >"$res"
log() { echo "$*" | tee -a "$res"; }
# late: past BUDGET seconds (default 480) since the start; later steps are
# skipped, so that the call ends inside the device's 9 minutes.
late() { [ $(( $(date +%s) - t0 )) -gt "${BUDGET:-480}" ] && log "  past ${BUDGET:-480} s: $* skipped"; }
gen10m_topics || exit 1
log "gen: $(( $(date +%s) - t0 )) s, $(ls -l /tmp/g10m-topics.qp | awk '{print $5}') bytes"
nq=${NQ:-10000}
head -"$nq" "$d/06.efficiency_topics.txt" >/tmp/q06.txt
: >/tmp/q06x.txt
for i in $(seq 1 "${REPS:-10}"); do sed "s/^/r$i-/" /tmp/q06.txt >>/tmp/q06x.txt; done
# row MODE FILE: q/s and p99 of the bench row of MODE; split: the GPU time
# split; work: the OR work lines.
row() { awk -v m="$1" '$1==m && $4 ~ /^[0-9]+$/ {print m " " $4 " q/s, p99 " $8 " ms, " $9 " results/q"; exit}' "$2"; }
split() { awk -v m="$1" '/GPU time split/{f=1; next} f==1 && $1=="mode" {f=2; next}
  f==2 { if ($1==m) {print "    " m " wall " $5 " ms, score " $8 ", top-k " $9 ", transfer " $10; exit}; f=0 }' "$2"; }
# (the work lines: OR's, then AND+OR's.)
work() { grep -E 'OR tiles accumulated|OR lists pre-decoded|OR queries answered whole' "$1" | sed 's/^ */    /'; }
run() { # NAME IDX QUERIES LIMIT ROUND VARIANT
  local o=/tmp/$name-$1-$6-r$5.txt bb=/tmp/qp-old env=()
  [ "$6" = old ] || bb=/tmp/qp-new
  [ "$6" = off ] && env=("$off_env")
  env ${env[@]+"${env[@]}"} timeout 150 "$bb" bench query "$2" "$3" --limit "$4" --device gpu --gpu-only --modes or,andor --profile \
    >"$o" 2>&1 || log "  ($1 $6 r$5: rc=$?)"
  log "$1 round$5 $6: $(row or "$o"); $(row andor "$o")"
  split or "$o" | tee -a "$res"
  split andor "$o" | tee -a "$res"
  work "$o" | tee -a "$res"
}
for r in $(seq 1 "${ROUNDS:-2}"); do
  for v in old off new; do late "g10m $v r$r" || run g10m /tmp/g10m-topics.qp /tmp/q06.txt "$nq" "$r" "$v"; done
done
log "  elapsed $(( $(date +%s) - t0 )) s"
if [ -s /tmp/gcide.qp ]; then
  for r in $(seq 1 "${ROUNDS:-2}"); do
    for v in old off new; do late "gcide $v r$r" || run gcide /tmp/gcide.qp /tmp/q06x.txt "$(wc -l </tmp/q06x.txt)" "$r" "$v"; done
  done
  log "  elapsed $(( $(date +%s) - t0 )) s"
fi
# Results: old and new (off too with HASH_OFF=1), OR and AND+OR, as TREC runs.
h() { [ -s "$1" ] && echo "$(sha256sum <"$1" | cut -c1-16) ($(wc -l <"$1") lines)" || echo none; }
for m in or andor; do
  for v in old ${HASH_OFF:+off} new; do
    late "results $m $v" && continue
    bb=/tmp/qp-new env=()
    [ "$v" = old ] && bb=/tmp/qp-old
    [ "$v" = off ] && env=("$off_env")
    env ${env[@]+"${env[@]}"} timeout 90 "$bb" query /tmp/g10m-topics.qp --device gpu --mode "$m" --queries /tmp/q06.txt \
      --limit "$nq" --run "/tmp/run-$m-$v.txt" >/dev/null 2>&1 || log "  (query $m $v: rc=$?)"
  done
  log "g10m $m results: old $(h /tmp/run-$m-old.txt), off $(h /tmp/run-$m-off.txt), new $(h /tmp/run-$m-new.txt)"
done
log "  elapsed $(( $(date +%s) - t0 )) s"
cd /tmp && tar czf "$OUT/$name.tgz" "$name"-*.txt
