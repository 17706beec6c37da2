#!/usr/bin/env bash
# scripts/device/sched4.sh — issue 24, fourth round: CPU+GPU against the sum
# of the processors alone, old (a build of main) and new (branch sched4)
# `qp bench sched`, for one collection and the modes of MODES per call:
# rate search of the highest sustained rate (deadline 200 ms, to 5%, RUNS 8
# runs per repeat, REPEATS 1; runs of at least 1 s of Poisson arrivals of
# the TREC 2006 efficiency log; 1,500 training queries, 3,000 replayed).
#
# Variants (VARIANTS, in this order; each one process of at most VLIMIT s):
#   old     main's binary (/tmp/qp-old): cpu-only, gpu-only, cpu+gpu-first
#           (one GPU batch in flight, main's dispatcher)
#   new     this branch: cpu-only, gpu-only, cpu+gpu-first with its defaults
#           (--gpu-slots 2, the dispatcher cost cuts)
#   slots1  this branch with --gpu-slots 1: gpu-only, cpu+gpu-first
#   adapt   this branch with --prepare-adapt --prepare-cores PREP (4):
#           cpu+gpu-first only (its ratios use new's cpu-only and gpu-only)
#   prep    this branch with --prepare-cores PREP only: gpu-only, cpu+gpu-first
#   f:NAME  new's binary, cpu+gpu-first only, with the flags in $VF_NAME
#           and the environment in $VE_NAME (a sweep of knobs: VARIANTS="new
#           f:spare2 f:p24" VF_spare2="--spare-fixed 2" VE_p24="GOMAXPROCS=24")
#
# Output: $OUT/sched4-COLL.txt: per variant and mode the "highest sustained"
# table, then one line per variant and mode:
#   ratio VARIANT MODE: cpu C gpu G cpu+gpu H: /sum x.xx /better y.yy
# (issue 24's targets: /sum >= 0.90, /better >= 1). The CPU and GPU rates of
# a line are its own variant's where it ran them, else new's. Logs of every
# run in $OUT/sched4-COLL-VARIANT-MODE.log, packed into $OUT/all.tgz.
#
#   COLL=gcide      index carried (bin/dev/data/gcide.qp.xz); MODES=and is
#                   about 4.5-6 min (the default VARIANTS; keep one mode per
#                   call, or VARIANTS="new adapt" for a second call)
#   COLL=rfc-pages  index carried (bin/dev/data/rfc-pages.qp.xz)
#   COLL=gen10m     /tmp/g10m-topics.qp kept on the warm machine (build it
#                   with COLL=gen10m GEN=1 bash scripts/device/sched3.sh)
#
# Twelfth round (branch coop): the CPU slots helping the GPU's host work
# (--cpu-help, on in new) against not (f:nohelp) and against the fan-out
# before the Board (f:spawn); qp-old is needed only where VARIANTS has old:
#   REPEATS=2 COLL=gcide MODES="and or andor" VARIANTS="new f:nohelp f:spawn" \
#     VF_nohelp=--cpu-help=false VF_spawn=--cpu-help=false VE_spawn=QP_HOST_ASSIST=off \
#     BUDGET=500 bash scripts/device/sched4.sh
#
# Fourteenth round (branch share): the CPU's steady share (--cpu-share 1)
# against GPU-first's overflow alone on the same machine (f:base: cpu+gpu-first
# with the defaults); about 100 s of runs, the ratios against run 4's
# cpu-only and gpu-only (the lines print "no cpu-only/gpu-only to compare"):
#   COLL=gcide MODES="and or" VARIANTS="f:base f:share1" VF_share1="--cpu-share 1" \
#     VLIMIT=60 BUDGET=200 bash scripts/device/sched4.sh
#
# Build (on the Go machine, repository root, branch sched4):
#   mkdir -p bin/dev/data && cp ../shared/data/queries/06.efficiency_topics.txt bin/dev/data/
#   CGO_ENABLED=0 go build -o /tmp/qp ./cmd/qp && xz -T0 -9 -c /tmp/qp >bin/dev/data/qp.xz
#   git -C /work/main archive main | (mkdir -p /tmp/qp-main && tar -x -C /tmp/qp-main) &&
#     (cd /tmp/qp-main && CGO_ENABLED=0 go build -o /tmp/qp-old ./cmd/qp) &&
#     xz -T0 -9 -c /tmp/qp-old >bin/dev/data/qp-old.xz
#   /tmp/qp index --in /tmp/qp-data/collections/gcide/docs.jsonl --out /tmp/gcide.qp \
#     --stem english --stopwords english && xz -T0 -6 -c /tmp/gcide.qp >bin/dev/data/gcide.qp.xz
#   (rfc-pages the same; both binaries read the same index format)
# then with carry ["bin/dev"]:
#   COLL=gcide MODES=and bash scripts/device/sched4.sh
#   COLL=gcide MODES=or bash scripts/device/sched4.sh      (and andor, rfc-pages ...)
source scripts/device/lib.sh
if [ "${UNPACK:-1}" = 1 ]; then
  [ -e "$bin/data/qp.xz" ] && rm -f /tmp/qp
  [ -e "$bin/data/qp-old.xz" ] && rm -f /tmp/qp-old
  BIN=${BIN:-bin/dev} bash scripts/device/unpack.sh || exit 1
fi
case " ${VARIANTS:-old} " in *" old "*) # main's binary only where a variant runs it
  [ -x /tmp/qp-old ] || chmod +x /tmp/qp-old 2>/dev/null
  [ -x /tmp/qp-old ] || { echo "no /tmp/qp-old (carry bin/dev/data/qp-old.xz)"; exit 1; } ;;
esac
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 ))s; }
coll=${COLL:-gcide}
queries=${QUERIES:-$bin/data/06.efficiency_topics.txt}
case $coll in
gen10m) idx=/tmp/g10m-topics.qp ;;
*) idx=/tmp/$coll.qp ;;
esac
[ -s "$idx" ] || { echo "no $idx (carry bin/dev/data/$coll.qp.xz)"; exit 1; }
echo "== $coll ready at $(elapsed); $(nproc) cores; $(head -2 "$OUT/device.txt" | tail -1)"
prep=${PREP:-4}
sum=$OUT/sched4-$coll.txt
: >"$sum"
declare -A rate # rate[VARIANT.MODE.SETUP]
for m in ${MODES:-and}; do
  for v in ${VARIANTS:-old new slots1 adapt}; do
    if [ $(( $(date +%s) - T0 )) -gt "${BUDGET:-480}" ]; then echo "== skipping $v $m: past ${BUDGET:-480}s" | tee -a "$sum"; continue; fi
    qp=$bin/qp setups=cpu-only,gpu-only,cpu+gpu-first flags=() envs=()
    case $v in
    old) qp=/tmp/qp-old ;;
    new) ;;
    slots1) setups=gpu-only,cpu+gpu-first flags=(--gpu-slots 1) ;;
    adapt) setups=cpu+gpu-first flags=(--prepare-adapt --prepare-cores "$prep") ;;
    prep) setups=gpu-only,cpu+gpu-first flags=(--prepare-cores "$prep") ;;
    f:*) # f:NAME: new's binary, cpu+gpu-first only, with the flags of $VF_NAME
      vn=VF_${v#f:} ve=VE_${v#f:}; setups=cpu+gpu-first; read -r -a flags <<<"${!vn:-}"; read -r -a envs <<<"${!ve:-}" ;;
    *) echo "unknown variant $v"; continue ;;
    esac
    log=$OUT/sched4-$coll-$v-$m.log
    env "${envs[@]}" timeout "${VLIMIT:-170}" "$qp" bench sched "$idx" "$queries" --device gpu --mode "$m" \
      --train "${TRAIN:-1500}" --replay "${REPLAY:-3000}" --deadline "${DEADLINE:-200ms}" --rates "" --min-duration 1s \
      --search-runs "${RUNS:-8}" --search-repeats "${REPEATS:-1}" --setups "$setups" "${flags[@]}" ${FLAGS:-} >"$log" 2>&1
    rc=$?
    { echo "== $coll $m $v rc=$rc at $(elapsed) ($qp ${flags[*]})"
      sed -n '/highest sustained/,$p' "$log" | cut -c1-170; } | tee -a "$sum"
    for st in cpu-only gpu-only cpu+gpu-first; do
      r=$(sed -n '/highest sustained/,$p' "$log" | awk -v s="$st" '$1==s {print $2; exit}')
      [ -n "$r" ] && rate[$v.$m.$st]=$r
    done
  done
done
for m in ${MODES:-and}; do
  for v in ${VARIANTS:-old new slots1 adapt}; do
    h=${rate[$v.$m.cpu+gpu-first]:-}
    [ -n "$h" ] || continue
    c=${rate[$v.$m.cpu-only]:-${rate[new.$m.cpu-only]:-}}
    g=${rate[$v.$m.gpu-only]:-${rate[new.$m.gpu-only]:-}}
    [ -n "$c" ] && [ -n "$g" ] || { echo "ratio $v $m: cpu+gpu $h, no cpu-only/gpu-only to compare" | tee -a "$sum"; continue; }
    awk -v v="$v" -v m="$m" -v c="$c" -v g="$g" -v h="$h" 'BEGIN {
      b = c > g ? c : g
      printf "ratio %s %s: cpu %d gpu %d cpu+gpu %d: /sum %.2f /better %.2f\n", v, m, c, g, h, h/(c+g), h/b }' | tee -a "$sum"
  done
done
tar czf /tmp/sched4-all.tgz -C "$OUT" . && mv /tmp/sched4-all.tgz "$OUT/all.tgz"
find "$OUT" -mindepth 1 -maxdepth 1 ! -name all.tgz ! -name device.txt ! -name "sched4-$coll.txt" -exec rm -rf {} +
ls -la "$OUT"
