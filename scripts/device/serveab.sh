#!/usr/bin/env bash
# scripts/device/serveab.sh — issue #25's targets, old server against new:
# for each mode (MODES, default "and or") and each server build (new =
# bin/dev/qp, run first; old = $OLD, main's qp), `qp serve --device
# $DEVICE` on the gen index (lib.sh's gen10m, MODEL (topics for issue 25's
# figures) and DOCS (default 10M); or IDX) is loaded by the SAME generator,
# the new build's `qp bench load --client raw` (plain HTTP/1.1, prebuilt
# requests, latency from the intended send time; GOMAXPROCS=$GEN, default
# 6), levels of DUR (default 4s):
#   sat1    saturation, one query per request (POST /v1/search), $CONNS
#           connections (default 4096: the GPU needs many queries in flight)
#   sat100  saturation, 100 queries per request, 64 connections
#   r80     a constant rate of 80% of the IN-PROCESS rate (the issue's
#           "p99 <= 20 ms at 80% of that rate"), one query per request,
#           $CONNS connections
#   r80s    80% of the first new server's sat1 rate (the fourteenth
#           session's r80: the same offered rate for both builds)
# (R80="r80" or "r80s" keeps one of the two), in ROUNDS (default 1)
# rounds, new old (the spread between rounds is the noise).
# Each row: q/s and its share of the in-process rate (inproc%), p50/p99/max
# latency (client side), status codes, the server's CPU over the level
# (srv_us_per_req = server CPU µs per answered request), the generator's
# cores, and the server's own latency breakdown from its /metrics
# (histogram deltas over the level: mean and p99 of the queue wait
# (arrival to batch start), of the batch's time (from its start: the
# host preparation, the wait for the device and the device phase), and of
# the whole request inside the server; the batches' count and mean size;
# and, new build on a GPU, the pipelined batch's three phases: host
# preparation, wait for the device, device phase; zero counts otherwise).
# The in-process batch throughput is qp bench serve's first line (qp.Stream,
# 16,384-query chunks, best of 3; new build: Stream runs one SearchBatch at
# a time, which the change does not touch).
# SERVE_FLAGS adds qp serve flags to both builds; SERVE_FLAGS_OLD and
# SERVE_FLAGS_NEW to one (e.g. SERVE_FLAGS_NEW="--inflight 1" or
# "--batch-budget -1" separates the pipelining from the automatic cap).
# Budget (GPU, 10M topic model cold): gen 120-200 s; per mode: in-process
# ~20 s, then per build ~15 s start + 4 x (DUR + ~1.5 s): ~40 s with DUR=4s;
# ROUNDS=1, both modes: ~3 min after gen, so ~5-7 minutes cold, ~3 warm
# (no build starts after 500 s, no mode after 430 s).
#
# Run (the lead): here, on the serve2 branch,
#   bash scripts/device/build.sh &&
#   git -C /work/main archive main | (mkdir -p /tmp/qpm && tar -x -C /tmp/qpm) &&  # main before serve2's merge
#   (cd /tmp/qpm && CGO_ENABLED=0 go build -o /tmp/qp-old ./cmd/qp) &&
#   xz -T0 -c /tmp/qp-old >bin/dev/data/qp-old.xz &&
#   xz -T0 -c bin/dev/qp >bin/dev/data/qp.xz && rm bin/dev/qp bin/dev/*.test
# (about 25 MB: the test binaries are not needed), then on the GPU machine,
# carry ["bin/dev"] (unpack.sh keeps a /tmp/qp or /tmp/qp-old already there:
# remove them on a machine that ran other calls):
#   rm -f /tmp/qp /tmp/qp-old; bash scripts/device/unpack.sh; MODEL=topics bash scripts/device/serveab.sh
# On the warm machine (index kept), a second round or a variant:
#   MODEL=topics ROUNDS=2 MODES=and bash scripts/device/serveab.sh
#   MODEL=topics OLD=$PWD/bin/dev/qp SERVE_FLAGS_OLD="--inflight 1 --batch-budget -1" bash scripts/device/serveab.sh
# (the second compares pipelining + cap against one batch in flight, same build).
# Output: $OUT/serveab.txt (the rows; also on stdout), $OUT/serveab-*.json
# (the generator's rows), $OUT/serveab-*-server.log, $OUT/gen.log.
# Look at: sat1 and sat100 inproc% new vs old (target >= 80%), p99 at r80
# and r80s new vs old (target <= 20 ms at r80), and at r80 which of queue
# / batch / in-server dominates, the mean batch size (new: small at r80,
# large at sat), gen cores (near GEN: the generator limited the rate).
source scripts/device/lib.sh
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
OLD=${OLD:-/tmp/qp-old}
DEVICE=${DEVICE:-gpu}
DUR=${DUR:-4s}
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
  /^qp_serve_(queue_wait|batch_duration|request_duration|batch_prepare|batch_device_wait|batch_device)_seconds/ {
    name=$1; v=$NF; sub(/\{.*/, "", name)
    if ($1 ~ /request_duration/ && $1 !~ /endpoint="search"/ && $1 !~ /endpoint="batch"/) next
    key=$1; if (f==1) a[key]=v; else b[key]=v-a[key] }
  END {
    n=split("queue_wait batch_duration request_duration batch_prepare batch_device_wait batch_device", hs, " ")
    for (i=1;i<=n;i++) { h="qp_serve_" hs[i] "_seconds"; s=0; c=0; delete le
      if (i==4) printf "\n       pipelined GPU batches:"
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
  python3 - "$j" "$c0" "$c1" "$t0" "$t1" "$b" "$m" "${inproc:-0}" <<'EOF' 2>/dev/null || awk -v f="$j" 'BEGIN{getline l <f; print "  " l}'
import json, sys
r = json.load(open(sys.argv[1]))
c = float(sys.argv[3]) - float(sys.argv[2]); w = float(sys.argv[5]) - float(sys.argv[4])
req = r["qps"] * r["wall_s"] / r["queries_per_request"]
ip = float(sys.argv[8])
pct = f'{100*r["qps"]/ip:5.1f}%' if ip > 0 else '    -'
print(f'{sys.argv[7]:4} {sys.argv[6]:4} {r["level"]:7} offered {r["offered_rps"]:8.0f} q/s {r["qps"]:8.0f} inproc% {pct} p50 {r["p50_ns"]/1e6:7.2f} p99 {r["p99_ns"]/1e6:8.2f} max {r["max_ns"]/1e6:8.1f} ms '
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
# want LEVEL: whether R80 (empty: both) keeps that rate level.
want() { [ -z "${R80:-}" ] || [ "$R80" = "$1" ]; }
for m in ${MODES:-and or}; do
  if [ "$SECONDS" -gt 430 ]; then echo "== $m skipped (time: ${SECONDS}s)" | tee -a "$res"; continue; fi
  timeout 100 "$bin/qp" bench serve "$IDX" /tmp/serveab-q.txt --device "$DEVICE" --mode "$m" --duration 1s \
    --conns-one 64 --per-request 0 --fractions "" --many 0 2>&1 | grep "^in-process" | sed "s/^/$m /" | tee -a "$res" >/tmp/serveab-inproc
  inproc=$(sed -n 's/.*): \([0-9.]*\) q\/s.*/\1/p' /tmp/serveab-inproc | head -1)
  rm -f /tmp/serveab-r80s
  for b in $(for _ in $(seq "${ROUNDS:-1}"); do echo new old; done); do
    if [ "$SECONDS" -gt 500 ]; then echo "== $m $b skipped (time: ${SECONDS}s)" | tee -a "$res"; continue; fi
    exe=$bin/qp; [ "$b" = old ] && exe=$OLD
    server "$exe" "$b" || continue
    {
      level "$b" "$m" sat1 1 0 "$CONNS"
      [ -s /tmp/serveab-r80s ] || awk '{printf "%.0f", 0.8*$1}' /tmp/serveab-last-qps >/tmp/serveab-r80s
      level "$b" "$m" sat100 100 0 64
      if want r80 && [ -n "$inproc" ]; then
        level "$b" "$m" r80 1 "$(awk -v r="$inproc" 'BEGIN{printf "%.0f", 0.8*r}')" "$CONNS"
      fi
      if want r80s; then
        level "$b" "$m" r80s 1 "$(cat /tmp/serveab-r80s 2>/dev/null || echo 1000)" "$CONNS"
      fi
    } | tee -a "$res"
    kill -TERM "$spid"; wait "$spid"
    echo "== $m $b done (${SECONDS}s)"
  done
done
