#!/usr/bin/env bash
# Runs several device scripts (scripts/device/NAME.sh) in one GPU-machine
# call, each with its own $OUT/NAME and wall-clock limit:
#   bash scripts/device/all.sh NAME[:SECONDS] ...
# Each script expects its binaries under bin/dev/NAME/ (built here first;
# the header of each script gives its build commands).
set -u
root=${OUT:-/tmp/out}
for spec in "$@"; do
  name=${spec%%:*}; lim=${spec#*:}; [ "$lim" = "$spec" ] && lim=240
  mkdir -p "$root/$name"
  start=$(date +%s)
  OUT="$root/$name" timeout "$lim" bash "scripts/device/$name.sh" >"$root/$name/run.log" 2>&1
  rc=$?
  echo "== $name: rc=$rc in $(( $(date +%s) - start ))s (limit ${lim}s)"
  tail -${TAILN:-15} "$root/$name/run.log"
done
