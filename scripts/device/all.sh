#!/usr/bin/env bash
# Runs several device scripts (scripts/device/NAME.sh) in one GPU-machine
# call, each with its own output folder and wall-clock limit:
#   bash scripts/device/all.sh NAME[:SECONDS] ...
# Each script expects its binaries under bin/dev/ (scripts/device/build.sh,
# run here first). The device tool returns at most 8 files from $OUT, so
# every script's files are packed into $OUT/results.tgz (NAME/...), beside
# $OUT/summary.txt (each script's status and the tail of its log).
set -u
root=${OUT:-/tmp/out}
work=$(mktemp -d)
for spec in "$@"; do
  name=${spec%%:*}; lim=${spec#*:}; [ "$lim" = "$spec" ] && lim=240
  mkdir -p "$work/$name"
  start=$(date +%s)
  OUT="$work/$name" timeout "$lim" bash "scripts/device/$name.sh" >"$work/$name/run.log" 2>&1
  rc=$?
  {
    echo "== $name: rc=$rc in $(( $(date +%s) - start ))s (limit ${lim}s)"
    tail -"${TAILN:-15}" "$work/$name/run.log"
  } | tee -a "$root/summary.txt"
  tar czf "$root/results.tgz" -C "$work" .
done
