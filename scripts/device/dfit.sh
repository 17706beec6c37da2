#!/usr/bin/env bash
# scripts/device/dfit.sh — issue 25's p99 floor: the GPU AND batch's time
# D(n) = a + b·n on the 10M-document topic-model gen index, measured
# directly at batch sizes SIZES (one warm batch per `qp bench query`
# row, --profile's CUDA-event split beside it), so that the fixed cost a
# and the per-query cost b the serving floor follows come from the device
# rather than from qp serve's running fits. Prints one line per size and
# repeat (n, q/s, batch ms) and the least-squares a, b over them.
# Environment: SIZES (default 250 500 1000 2000 4000 8000 16000), REPS
# (default 2), MODES (default and), FLAGS (extra bench query flags),
# BUDGET (seconds, 540), REGEN=1, IDX (default /tmp/g10m-topics.qp, built
# by gen10m_topics; another index is used as it is).
#
# Build first (the Go machine, repository root):
#   mkdir -p bin/dev/data && cp ../shared/data/queries/0[56].efficiency_topics.txt bin/dev/data/
#   CGO_ENABLED=0 go build -o /tmp/qp ./cmd/qp && xz -T0 -c /tmp/qp >bin/dev/data/qp.xz
# GPU machine, carry ["bin/dev"]:
#   rm -f /tmp/qp; bash scripts/device/unpack.sh; bash scripts/device/dfit.sh
. scripts/device/lib.sh
t0=$(date +%s)
left() { echo $(( ${BUDGET:-540} - ($(date +%s) - t0) )); }
IDX=${IDX:-/tmp/g10m-topics.qp}
if [ "$IDX" = /tmp/g10m-topics.qp ]; then gen10m_topics || exit 1; fi
q=$bin/data/06.efficiency_topics.txt
: >"$OUT/dfit.txt"
for m in ${MODES:-and}; do
  for n in ${SIZES:-250 500 1000 2000 4000 8000 16000}; do
    for r in $(seq "${REPS:-2}"); do
      [ "$(left)" -gt 40 ] || { echo "budget: stopped before $m $n"; break 3; }
      log=$OUT/q-$m-$n-$r.log
      timeout $(( $(left) - 20 )) $bin/qp bench query "$IDX" "$q" --limit "$n" --device gpu --gpu-only \
        --modes "$m" --profile ${FLAGS:-} >"$log" 2>&1 || { echo "$m $n: rc=$?"; tail -3 "$log"; continue; }
      # the GPU row: mode, algorithm "gpu…", threads "gpu", queries/s
      qps=$(awk -v m="$m" '$1 == m && $2 ~ /^gpu/ && $3 == "gpu" {print $4; exit}' "$log")
      echo "$m $n $r $qps" | tee -a "$OUT/dfit.txt"
    done
  done
done
# least squares of batch seconds n/qps on n, per mode
awk '$4>0 {t=$2/$4; k=$1; N[k]++; sx[k]+=$2; sy[k]+=t; sxx[k]+=$2*$2; sxy[k]+=$2*t}
  END {for (k in N) {d=N[k]*sxx[k]-sx[k]*sx[k]; b=(N[k]*sxy[k]-sx[k]*sy[k])/d; a=(sy[k]-b*sx[k])/N[k];
  printf "%s: D(n) = %.3f ms + %.3f us * n over %d rows\n", k, a*1e3, b*1e6, N[k]}}' "$OUT/dfit.txt"
# the profile split of the smallest and largest batch
for f in $(ls "$OUT"/q-*-1.log | head -1) $(ls -v "$OUT"/q-*-1.log | tail -1); do echo "== $f"; grep -iE 'decode|intersect|score|top-k|host|wall|owner|launch' "$f" | head -12; done
echo "total $(( $(date +%s) - t0 ))s"
