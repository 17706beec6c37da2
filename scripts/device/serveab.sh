#!/usr/bin/env bash
# scripts/device/serveab.sh — issue #25's per-request overhead and p99,
# old server against new (fourteenth session): for each mode (MODES,
# default "and or") and each server build (old = $OLD, main's qp, run
# first; new = bin/dev/qp), `qp serve --device $DEVICE` on the gen index
# (lib.sh's gen10m, DOCS documents, default 10M) is loaded by the SAME
# generator, the new build's `qp bench load --client raw` (plain HTTP/1.1,
# a third of vegeta's CPU per request; GOMAXPROCS=$GEN, default 6), levels
# of DUR (default 5s):
#   sat1    saturation, one query per request (POST /v1/search), $CONNS
#           connections (default 4096: the GPU needs many queries in flight)
#   sat100  saturation, 100 queries per request, 64 connections
#   r80     a constant rate of 80% of the first new server's sat1 rate
#           (the same offered rate for both builds), $CONNS connections
# in ROUNDS (default 2) rounds, new old new old (the spread between rounds
# is the noise).
# Each row: q/s, p50/p99/max latency (client side, from the intended send
# time), status codes, the server's CPU over the level (/proc/PID/stat:
# srv_us_per_req = server CPU µs per answered request), the generator's
# cores, and the server's own latency breakdown from its /metrics
# (histogram deltas over the level: mean and p99 of the queue wait
# (arrival to batch start), of the batch's time on the processor, and of
# the whole request inside the server). Plus once per mode the in-process
# batch throughput (qp bench serve's first line, new build).
# SERVE_FLAGS adds qp serve flags to both builds (e.g. "--inflight 1
# --batch-max 4096": the CPU backend batched as a GPU is); SERVE_FLAGS_OLD
# and SERVE_FLAGS_NEW to one. The new build's GPU default has no batch time
# budget (the old one: 8 ms): OLD=$PWD/bin/dev/qp SERVE_FLAGS_OLD="--batch-budget
# 8ms" compares that default alone, same build.
# Budget (GPU, 10M cold): gen 100-200 s; per mode: in-process ~15 s, then
# per build ~15 s start + 3 x DUR + 5 s = ~35 s, 4 builds: about 7-9
# minutes cold, 5 warm (no build starts after 480 s, no mode after 450 s;
# ROUNDS=1 or DOCS=5000000 when short of time).
#
# Run (after scripts/device/build.sh here, with the old build's qp xz'd as
# bin/dev/data/qp-old.xz, e.g. main before the serve branch's merge:
# git -C /work/main worktree add /tmp/m 3fb0a2c &&
# (cd /tmp/m && CGO_ENABLED=0 go build -o /tmp/qp-old ./cmd/qp) &&
# xz -T0 -c /tmp/qp-old >bin/dev/data/qp-old.xz; carry bin/dev):
#   bash scripts/device/unpack.sh; DUR=4s bash scripts/device/serveab.sh
# and, if the OR mode was skipped for time, on the warm machine (the gen
# index reused): DUR=4s MODES=or bash scripts/device/serveab.sh
# Output: $OUT/serveab.txt (the rows; also on stdout), $OUT/serveab-*.json
# (the generator's rows), $OUT/serveab-*-server.log, $OUT/gen.log.
# Look at: srv_us_per_req old vs new at sat1 (the CPU per request), q/s at
# sat1 against the in-process q/s (target >= 80%), gen cores (if it is
# near GEN the generator limited the rate), p99 at r80 (target <= 20 ms)
# and which of queue / batch / in-server dominates it.
source scripts/device/lib.sh
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
OLD=${OLD:-/tmp/qp-old}
DEVICE=${DEVICE:-gpu}
DUR=${DUR:-5s}
GEN=${GEN:-6}
CONNS=${CONNS:-4096}
IDX=${IDX:-/tmp/g10m.qp}
Q=${Q:-$bin/data/06.efficiency_topics.txt}
LIMIT=${LIMIT:-50000}
PORT=${PORT:-18080}
if [ "$IDX" = /tmp/g10m.qp ]; then gen10m || exit 1; fi
chmod +x "$OLD" 2>/dev/null  # unpack.sh leaves /tmp/qp-old without the x bit
[ -x "$OLD" ] || { echo "no old build at $OLD (see the header)"; exit 1; }
head -n "$LIMIT" "$Q" >/tmp/serveab-q.txt
res=$OUT/serveab.txt
tck=$(getconf CLK_TCK)
echo "device $DEVICE, index $IDX, $(nproc) cores, generator GOMAXPROCS=$GEN, DUR $DUR, CONNS $CONNS" | tee "$res"

# cpu PID: the process's user+system CPU seconds.
cpu() { awk -v t="$tck" '{printf "%.3f", ($14+$15)/t}' "/proc/$1/stat"; }
# metrics: the server's /metrics (bash's /dev/tcp: no curl needed).
metrics() {
  exec 3<>"/dev/tcp/127.0.0.1/$PORT" || return
  printf 'GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n' >&3
  cat <&3
  exec 3<&-
}
# breakdown BEFORE AFTER: mean and p99 (bucket upper bound) of the three
# histograms' deltas, in ms.
breakdown() {
  awk 'FNR==1{f++} /^qp_serve_batch_size_(sum|count)/ { if (f==1) a[$1]=$NF; else b[$1]=$NF-a[$1] }
  /^qp_serve_(queue_wait|batch_duration|request_duration)_seconds/ {
    name=$1; v=$NF; sub(/\{.*/, "", name)
    if ($1 ~ /request_duration/ && $1 !~ /endpoint="search"/ && $1 !~ /endpoint="batch"/) next
    key=$1; if (f==1) a[key]=v; else b[key]=v-a[key] }
  END {
    n=split("queue_wait batch_duration request_duration", hs, " ")
    for (i=1;i<=n;i++) { h="qp_serve_" hs[i] "_seconds"; s=0; c=0; delete le
      for (k in b) { if (index(k, h "_sum")==1) s+=b[k]; if (index(k, h "_count")==1) c+=b[k]
        if (index(k, h "_bucket")==1) { m=k; sub(/.*le="/, "", m); sub(/".*/, "", m); le[m]+=b[k] } }
      p=""; if (c>0) { best=""; for (m in le) if (le[m] >= 0.99*c && (best=="" || m+0 < best+0)) best=m; p=best }
      printf " %s mean %.2f p99<=%s", hs[i], (c>0 ? 1000*s/c : 0), (p=="" ? "-" : (p=="+Inf" ? p : sprintf("%.1f", 1000*p))) }
    printf " (ms); batches %d, mean size %.1f\n", b["qp_serve_batch_size_count"], (b["qp_serve_batch_size_count"]>0 ? b["qp_serve_batch_size_sum"]/b["qp_serve_batch_size_count"] : 0) }' "$1" "$2"
}
# level BUILD MODE NAME PER RATE CONNS: one load level on the running server.
level() {
  local b=$1 m=$2 name=$3 per=$4 rate=$5 conns=$6
  local j=$OUT/serveab-$m-$b-$name.json c0 c1 t0 t1
  metrics >/tmp/serveab-m0.txt 2>/dev/null
  c0=$(cpu "$spid"); t0=$(date +%s.%N)
  GOMAXPROCS=$GEN timeout "$(( ${DUR%s} + 40 ))" "$bin/qp" bench load "http://127.0.0.1:$PORT" /tmp/serveab-q.txt --client raw --mode "$m" \
    --per-request "$per" --rate "$rate" --conns "$conns" --duration "$DUR" --name "$name" >"$j" 2>>"$OUT/serveab-gen.log"
  c1=$(cpu "$spid"); t1=$(date +%s.%N)
  metrics >/tmp/serveab-m1.txt 2>/dev/null
  python3 - "$j" "$c0" "$c1" "$t0" "$t1" "$b" "$m" <<'EOF' 2>/dev/null || awk -v f="$j" 'BEGIN{getline l <f; print "  " l}'
import json, sys
r = json.load(open(sys.argv[1]))
c = float(sys.argv[3]) - float(sys.argv[2]); w = float(sys.argv[5]) - float(sys.argv[4])
req = r["qps"] * r["wall_s"] / r["queries_per_request"]
print(f'{sys.argv[7]:4} {sys.argv[6]:4} {r["level"]:7} offered {r["offered_rps"]:8.0f} q/s {r["qps"]:8.0f} p50 {r["p50_ns"]/1e6:7.2f} p99 {r["p99_ns"]/1e6:8.2f} max {r["max_ns"]/1e6:8.1f} ms '
      f'srv {c/w:5.2f} cores srv_us_per_req {1e6*c/max(req,1):6.1f} gen {r["client_cpu_s"]/r["wall_s"]:4.2f} cores codes {r["codes"]}')
EOF
  echo "     server:$(breakdown /tmp/serveab-m0.txt /tmp/serveab-m1.txt)"
  sed -n 's/.*"qps":\([0-9.]*\).*/\1/p' "$j" | head -1 >/tmp/serveab-last-qps
}
# server BUILD-BINARY: starts qp serve, waits until ready (90 s at most).
server() {
  # shellcheck disable=SC2086
  local extra=${SERVE_FLAGS_NEW:-}
  [ "$2" = old ] && extra=${SERVE_FLAGS_OLD:-}
  # shellcheck disable=SC2086
  "$1" serve "$IDX" --addr "127.0.0.1:$PORT" --device "$DEVICE" --log-level warn ${SERVE_FLAGS:-} $extra >"$OUT/serveab-$m-$2-server.log" 2>&1 &
  spid=$!
  for _ in $(seq 900); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
      metrics | grep -q "^HTTP/1.[01] 200" && return 0
    fi
    kill -0 "$spid" 2>/dev/null || { echo "server $2 exited"; tail -3 "$OUT/serveab-$m-$2-server.log"; return 1; }
    sleep 0.1
  done
  echo "server $2 not ready in 90 s"; return 1
}
for m in ${MODES:-and or}; do
  if [ "$SECONDS" -gt 450 ]; then echo "== $m skipped (time: ${SECONDS}s)" | tee -a "$res"; continue; fi
  timeout 100 "$bin/qp" bench serve "$IDX" /tmp/serveab-q.txt --device "$DEVICE" --mode "$m" --duration 1s \
    --conns-one 64 --per-request 0 --fractions "" --many 0 2>&1 | grep "^in-process" | sed "s/^/$m /" | tee -a "$res"
  rm -f /tmp/serveab-r80
  for b in $(for _ in $(seq "${ROUNDS:-2}"); do echo new old; done); do
    if [ "$SECONDS" -gt 480 ]; then echo "== $m $b skipped (time: ${SECONDS}s)" | tee -a "$res"; continue; fi
    exe=$bin/qp; [ "$b" = old ] && exe=$OLD
    server "$exe" "$b" || continue
    {
      level "$b" "$m" sat1 1 0 "$CONNS"
      [ -s /tmp/serveab-r80 ] || awk '{printf "%.0f", 0.8*$1}' /tmp/serveab-last-qps >/tmp/serveab-r80
      level "$b" "$m" sat100 100 0 64
      level "$b" "$m" r80 1 "$(cat /tmp/serveab-r80 2>/dev/null || echo 1000)" "$CONNS"
    } | tee -a "$res"
    kill -TERM "$spid"; wait "$spid"
    echo "== $m $b done (${SECONDS}s)"
  done
done
