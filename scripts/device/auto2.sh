#!/usr/bin/env bash
# scripts/device/auto2.sh — issue 20 §4: `qp query --device auto` against
# the faster of `--device gpu` and `--device cpu` (branch auto2: Device
# Auto streams each segment on one processor's own stream, the GPU's with
# two chunks in flight, the CPU's continuous one; auto_stream.go), old =
# main's auto, through cliab.sh: for each block (collection, R, mode) the
# new binary's gpu, cpu and auto runs and the old binary's auto, ROUNDS
# rounds (default 3, ABBA order), every run compared (cliab's "none
# equals gpu's", "runs identical").
#
# Carry bin/dev with bin/dev/data holding qp.xz (this branch), qp-old.xz
# (main), 06.efficiency_topics.txt, and per collection NAME.qp.xz and
# NAME.known.tsv (`qp queries NAME.qp --out NAME.known.tsv --kinds known
# --n 10000 --seed 1`). COLL (default gcide; rfc-pages) names the
# collection; PARTS (default "trec known") the query sets, in order:
# trec = the first 10,000 TREC'06 queries ×10 and ×100 (REPS_TREC, default
# "10 100"), known = the known-item set ×10. The call stops starting
# blocks after TOTAL seconds (default 480).
#
# TAG (default auto2) names the summary and the archive (auto3.sh sets
# it).
#
# Output, under $OUT: roottests.txt (with qp.test.xz), TAG-summary.txt
# (the root tests' count; per block and round: gpu, cpu,
# auto and old auto q/s, auto / the faster and old / the faster, then the
# rounds' range per block; and the routing lines of the first round's
# auto runs), TAG.tar.gz (each part's cliab.txt, cliab-table.txt,
# cliab-stats.txt), device.txt.
# (cliab.sh decompresses bin/dev/data/*.xz itself, into WORK or /tmp.)
source scripts/device/lib.sh
t0=$(date +%s)
top=$OUT
tag=${TAG:-auto2}
# The root package's tests on the GPU, when bin/dev/data/qp.test.xz
# (`CGO_ENABLED=0 go test -c -o qp.test .`) travels: the router's and the
# stream's and the race's simulations, TestRaceLive, TestAutoGPU,
# TestAutoGPUStream, TestStreamGPUInFlight.
if [ -s "$bin/data/qp.test.xz" ]; then
  xz -d -c "$bin/data/qp.test.xz" >/tmp/qp.test && chmod +x /tmp/qp.test
  /tmp/qp.test -test.run 'TestAutoGPU|TestRouter|TestRace|TestProfile|TestStreamFirstChunk|TestStreamGPUInFlight' -test.v >"$top/roottests.txt" 2>&1
  echo "root package tests: rc=$? ($(grep -c '^--- PASS' "$top/roottests.txt") passed, $(grep -c '^--- FAIL' "$top/roottests.txt") failed, $(grep -c '^--- SKIP' "$top/roottests.txt") skipped)" >>"$top/$tag-summary.txt"
fi
coll=${COLL:-gcide}
for part in ${PARTS:-trec known}; do
  left=$(( ${TOTAL:-480} - ($(date +%s) - t0) ))
  [ "$left" -gt 30 ] || { echo "$part: skipped (time)" >>"$top/$tag-summary.txt"; continue; }
  mkdir -p "$top/$part"
  case $part in
    trec) qset="" reps=${REPS_TREC:-10 100} ;;
    known) qset=$coll.known.tsv reps=10 ;;
  esac
  OUT=$top/$part QSET=$qset REPS=$reps COLLS=$coll DEVS="gpu cpu auto" BUDGET=$left AUTO_BENCH=0 \
    V10GPU=none V100GPU=none V10CPU=none V100CPU=none V10AUTO="${V10AUTO:-old none}" V100AUTO="${V100AUTO:-old none}" \
    ROUNDS=${ROUNDS:-3} ABBA=1 bash scripts/device/cliab.sh >"$top/$part/cliab.log" 2>&1
done
# The summary: per block and round, auto against the faster processor.
{
  for part in ${PARTS:-trec known}; do
    f=$top/$part/cliab.txt
    [ -s "$f" ] || continue
    echo "== $part"
    awk '
    / round[0-9]+: stream / {
      blk = $1 " " $2 " " $3; dev = $4; v = $5; r = $6; sub(/:$/, "", r)
      k = blk SUBSEP r
      if (!(k in seen)) { seen[k] = 1; order[++n] = k }
      if (dev == "auto" && (v == "old" || v == "oldrace")) old[k] = $8
      else if (dev == "auto" && v == "repeat") rep[k] = $8
      else if (dev == "auto" && v == "handoff") rgpu[k] = $8
      else if (dev == "auto" && v == "nohelp") nh[k] = $8
      else if (v == "none" || (dev == "auto" && v == "race")) rate[k, dev] = $8
    }
    /RUNS DIFFER|NONE DIFFERS|FAILED/ { print "!! " $0 }
    END {
      for (i = 1; i <= n; i++) {
        k = order[i]; split(k, p, SUBSEP)
        g = rate[k, "gpu"]; c = rate[k, "cpu"]; a = rate[k, "auto"]; o = old[k]
        best = g > c ? g : c
        ra = best > 0 ? a / best : 0; ro = best > 0 ? o / best : 0
        rr = (best > 0 && (k in rep)) ? rep[k] / best : 0
        printf "%s %s: gpu %.0f cpu %.0f auto %.0f old-auto %.0f: auto/faster %.3f old/faster %.3f", p[1], p[2], g, c, a, o, ra, ro
        if (k in rep) printf " repeat %.0f repeat/faster %.3f", rep[k], rr
        if (k in rgpu) printf " handoff %.0f handoff/faster %.3f", rgpu[k], (best > 0 ? rgpu[k] / best : 0)
        if (k in nh) printf " nohelp %.0f nohelp/faster %.3f", nh[k], (best > 0 ? nh[k] / best : 0)
        printf "\n"
        b = p[1]
        rn = (best > 0 && (k in nh)) ? nh[k] / best : 0
        if (!(b in lo)) { border[++nb] = b; lo[b] = ra; hi[b] = ra; olo[b] = ro; ohi[b] = ro; rlo[b] = rr; rhi[b] = rr; nlo[b] = rn; nhi[b] = rn }
        if (ra < lo[b]) lo[b] = ra; if (ra > hi[b]) hi[b] = ra
        if (ro < olo[b]) olo[b] = ro; if (ro > ohi[b]) ohi[b] = ro
        if (rr < rlo[b]) rlo[b] = rr; if (rr > rhi[b]) rhi[b] = rr
        if (rn < nlo[b]) nlo[b] = rn; if (rn > nhi[b]) nhi[b] = rn
      }
      for (j = 1; j <= nb; j++) {
        b = border[j]
        printf "RANGE %s: auto/faster %.3f-%.3f old/faster %.3f-%.3f", b, lo[b], hi[b], olo[b], ohi[b]
        if (rhi[b] > 0) printf " repeat/faster %.3f-%.3f", rlo[b], rhi[b]
        if (nhi[b] > 0) printf " nohelp/faster %.3f-%.3f", nlo[b], nhi[b]
        printf "\n"
      }
    }' "$f"
    grep -E 'runs identical|not compared|DIFFER' "$f"
    # The routing of each new auto run's first round (--stats).
    awk '/^== / { blk = $0 } /^device auto:|^[a-z]+: cpu [0-9]+ queries/ { if (blk ~ / auto (none|race|repeat|handoff|nohelp)$/) print blk ": " $0 }' "$top/$part/cliab-stats.txt"
  done
} >>"$top/$tag-summary.txt" 2>&1
cat "$top/$tag-summary.txt"
tar -czf "$top/$tag.tar.gz" -C "$top" $(for p in ${PARTS:-trec known}; do [ -d "$top/$p" ] && echo "$p"; done)
rm -rf "${top:?}/trec" "${top:?}/known"
