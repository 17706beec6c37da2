#!/usr/bin/env bash
# scripts/device/serveab.sh — issue #25's targets, new server against old,
# measured honestly: for each mode (MODES, default "and or") and each
# server build (new = bin/dev/qp, run first; old = $OLD, main's qp carried
# as bin/dev/data/qp-old.xz), `qp serve --device $DEVICE` on the gen index
# (lib.sh's gen10m: MODEL, default topics, and DOCS, default 10M; built
# there in ~170 s, reused on a warm machine; or IDX) is loaded by the SAME
# generator, the new build's `qp bench load --client raw` (plain HTTP/1.1,
# prebuilt requests, one open-loop schedule shared by all connections,
# connections dialed before the level, latency from each request's due
# time: no coordinated omission; GOMAXPROCS=$GEN, default 6), levels of
# DUR (default 4s):
#   sat1    saturation, one query per request (POST /v1/search), $CONNS
#           connections (default 16384: at 4096 the level was capped by
#           Little's law, 4096 in flight / 29.8 ms = 137k/s, not by the
#           server)
#   sat100  saturation, 100 queries per request, 64 connections
#   r80     80% of the IN-PROCESS rate (the issue's "p99 <= 20 ms at 80%
#           of that rate"), one query per request
#   r60     60% of it
# (LEVELS, default "sat1 sat100 r80 r60", keeps some), the fixed rates
# with rate × 100 ms connections (Little's law at 100 ms of latency), in
# ROUNDS (default 1) rounds, new old.
# Each row: q/s and its share of the in-process rate (inproc%), the
# client's latency p50/p90/p99/p99.9/max from the due time, its service
# time p99 (send to answer) and send lag p99 (due to send: above a
# millisecond or two the generator, not the server, set the tail), the
# server's CPU cores and µs per answered request, the generator's cores,
# redials, the generator's peak RSS, status codes; then the server's own
# breakdown from its /metrics (histogram deltas over the level: mean and
# p99 bucket of queue wait, batch time, in-server request time, and, new
# build, answer wake (batch return to handler), Go scheduling latency and
# GC pauses; pipelined GPU: host preparation, wait for the device, device
# phase; batches and mean size). After each level of the new build on a
# GPU, `qp bench pipebound` prints the model's p99 floor at the r80 and
# r60 rates from the server's fits of that moment (serve/pipebound.go,
# docs/BENCHMARKS.md "The p99 floor"). After each build, the server's peak
# RSS (VmHWM) and threads.
# The in-process batch throughput is qp bench serve's first line (qp.Stream
# over the queries, best of 3).
# SERVE_FLAGS adds qp serve flags to both builds; SERVE_FLAGS_OLD and
# SERVE_FLAGS_NEW to one. INPROC_FLAGS adds engine flags to the in-process
# run (qp bench serve) that the shares are of: give it the engine flags
# of SERVE_FLAGS, e.g. SERVE_FLAGS=--gpu-bitmap-and
# INPROC_FLAGS=--gpu-bitmap-and (the word-wise bitmap AND, both builds).
# BUILDS (default "new old") orders the builds of a round; "mid" is a
# third one, $MID (default /tmp/qp-mid: carry it as bin/dev/data/qp-mid.xz,
# unpack.sh puts it there), e.g. a branch without its last commit, so that
# one call separates two steps: BUILDS="new mid old"; "lean" is the new
# build with SERVE_FLAGS_LEAN (default --lean-http: the lean HTTP/1.1 path
# for whole POST /v1/search requests, serve/leanhttp.go), e.g.
# BUILDS="new lean old". Every build's row
# gives its share of the in-process rate (inproc%, the same in-process run).
# SERVER_CPUS and GEN_CPUS (CPU lists as taskset -c takes them, e.g.
# SERVER_CPUS=0-15 GEN_CPUS=16-31; default: none, every process on every
# core, as before) split a host with more cores than one GPU needs, as a
# real deployment has its clients on other machines: the server AND the
# in-process run that the shares (inproc%) are of run on SERVER_CPUS (the
# same cores: taskset, so Go's GOMAXPROCS is their count), the generator
# on GEN_CPUS with GOMAXPROCS=$GEN (default with GEN_CPUS: its count of
# cores; without: 6). Give both or neither; taskset (util-linux) must
# exist. On the 2-GPU kind (nvidia-h100-x2, 32 cores) use GPU 0 only
# (CUDA_VISIBLE_DEVICES, default 0 here); $OUT/topo.txt records which
# cores are near it (nvidia-smi topo -m) and lscpu's NUMA lines.
# Budget (GPU, 10M topic model cold): gen ~170 s; per mode: in-process
# ~20 s, per build ~15 s start + 4 x (DUR + ~3 s) ≈ 45 s: ~4 minutes after
# gen, ~7-8 minutes cold, ~4 warm (no build starts after 470 s, no mode
# after 400 s: the call ends within 9 minutes).
#
# Run (the lead), on the Go machine in the serve3 worktree:
#   bash scripts/device/build.sh &&
#   git -C /work/main archive main | (mkdir -p /tmp/qpm && tar -x -C /tmp/qpm) &&
#   (cd /tmp/qpm && CGO_ENABLED=0 go build -o /tmp/qp-old ./cmd/qp) &&
#   xz -T0 -c /tmp/qp-old >bin/dev/data/qp-old.xz &&
#   xz -T0 -c bin/dev/qp >bin/dev/data/qp.xz && rm bin/dev/qp bin/dev/*.test
# then on the GPU machine, carry ["bin/dev"]:
#   rm -f /tmp/qp /tmp/qp-old; bash scripts/device/unpack.sh; bash scripts/device/serveab.sh
# A second round on the warm machine (index kept):
#   ROUNDS=1 MODES=and bash scripts/device/serveab.sh
# Output: $OUT/serveab.txt (the rows; also on stdout), $OUT/serveab-*.json
# (the generator's rows), $OUT/serveab-*-server.log, $OUT/gen.log.
# Look at: sat1 and sat100 inproc% new vs old (target >= 80%) and the
# server's us/req (CPU per request, in the summary too); r80 p99
# (target <= 20 ms) beside the model's floor (pipebound) and the send lag
# (lag p99 near 0: the generator kept its schedule); where the in-server
# time goes (queue / batch / answer wake / sched); the summary at the end.
source scripts/device/lib.sh
# The fixed-rate levels open rate × 100 ms connections (22k at r80 of a
# 278k in-process rate), the server as many: raise the descriptor limit as
# far as the hard limit allows and say what it is (the twenty-first
# session's r80 level failed with "too many open files").
ulimit -n 1048576 2>/dev/null || ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
echo "open files: $(ulimit -n) (hard $(ulimit -Hn)); fs.nr_open $(cat /proc/sys/fs/nr_open 2>/dev/null)" >"$OUT/limits.txt"
# Where the hard limit is lower (20,000 on the 2-GPU H200 host of the
# twenty-fourth session: r80 at 232k/s wanted 23,173), the fixed-rate
# levels open at most RATE_CONNS_MAX connections (default the limit less
# 2,048): each connection then carries more than 100 ms of offered load
# before the schedule lags, which lag99 shows.
RATE_CONNS_MAX=${RATE_CONNS_MAX:-$(( $(ulimit -n) - 2048 ))}
echo "fixed-rate levels: at most $RATE_CONNS_MAX connections" >>"$OUT/limits.txt"
OLD=${OLD:-/tmp/qp-old}
DEVICE=${DEVICE:-gpu}
DUR=${DUR:-4s}
# The CPU split (see the header): srvpin and genpin prefix the commands.
SERVER_CPUS=${SERVER_CPUS:-}
GEN_CPUS=${GEN_CPUS:-}
srvpin=() genpin=()
if [ -n "$SERVER_CPUS$GEN_CPUS" ]; then
  [ -n "$SERVER_CPUS" ] && [ -n "$GEN_CPUS" ] || { echo "serveab: give SERVER_CPUS and GEN_CPUS together (got SERVER_CPUS='$SERVER_CPUS' GEN_CPUS='$GEN_CPUS')"; exit 1; }
  command -v taskset >/dev/null || { echo "serveab: SERVER_CPUS/GEN_CPUS need taskset (util-linux), not found"; exit 1; }
  for l in "$SERVER_CPUS" "$GEN_CPUS"; do
    taskset -c "$l" true 2>/dev/null || { echo "serveab: CPU list '$l' is not valid on this host ($(nproc --all) cores: 0-$(( $(nproc --all) - 1 )))"; exit 1; }
  done
  srvpin=(taskset -c "$SERVER_CPUS") genpin=(taskset -c "$GEN_CPUS")
  GEN=${GEN:-$(taskset -c "$GEN_CPUS" nproc)}
  export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
fi
GEN=${GEN:-6}
{ echo "SERVER_CPUS='$SERVER_CPUS' ($( [ -n "$SERVER_CPUS" ] && taskset -c "$SERVER_CPUS" nproc || nproc) cores) GEN_CPUS='$GEN_CPUS' GEN=$GEN CUDA_VISIBLE_DEVICES='${CUDA_VISIBLE_DEVICES:-}'"
  nvidia-smi topo -m 2>&1; lscpu 2>&1 | grep -Ei '^(cpu\(s\)|model name|socket|numa)'; } >"$OUT/topo.txt"
CONNS=${CONNS:-16384}
export MODEL=${MODEL:-topics}
IDX=${IDX:-/tmp/g10m.qp}
Q=${Q:-$bin/data/06.efficiency_topics.txt}
LIMIT=${LIMIT:-50000}
PORT=${PORT:-18080}
LEVELS=${LEVELS:-sat1 sat100 r80 r60}
if [ "$IDX" = /tmp/g10m.qp ]; then gen10m || exit 1; fi
MID=${MID:-/tmp/qp-mid}
BUILDS=${BUILDS:-new old}
chmod +x "$OLD" "$MID" 2>/dev/null  # unpack.sh leaves /tmp/qp-old without the x bit
case " $BUILDS " in
*" old "*) [ -x "$OLD" ] || { echo "no old build at $OLD (see the header)"; exit 1; } ;;
esac
case " $BUILDS " in *" mid "*) [ -x "$MID" ] || { echo "no mid build at $MID (see the header)"; exit 1; } ;; esac
# The script's working files (the queries, /metrics snapshots): its own
# folder, removed at exit.
tmp=$(mktemp -d /tmp/serveab.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
head -n "$LIMIT" "$Q" >"$tmp/q.txt"
res=$OUT/serveab.txt
sum=$OUT/serveab-summary.txt
: >"$sum"
tck=$(getconf CLK_TCK)
split="no CPU split"
[ -n "$SERVER_CPUS" ] && split="server and in-process on CPUs $SERVER_CPUS ($(taskset -c "$SERVER_CPUS" nproc) cores), generator on $GEN_CPUS"
echo "device $DEVICE, index $IDX (MODEL $MODEL), $(nproc) cores, $split, generator GOMAXPROCS=$GEN, DUR $DUR, sat1 CONNS $CONNS, levels $LEVELS" | tee "$res"

# cpu PID: the process's user+system CPU seconds.
cpu() { awk -v t="$tck" '{printf "%.3f", ($14+$15)/t}' "/proc/$1/stat"; }
# level BUILD MODE NAME PER RATE CONNS: one load level on the running server.
level() {
  local b=$1 m=$2 name=$3 per=$4 rate=$5 conns=$6
  local j=$OUT/serveab-$m-$b-$name.json c0 c1 t0 t1
  metrics >"$tmp/m0.txt" 2>/dev/null
  c0=$(cpu "$spid"); t0=$(date +%s.%N)
  GOMAXPROCS=$GEN timeout "$(( ${DUR%s} + 60 ))" ${genpin[@]+"${genpin[@]}"} "$bin/qp" bench load "http://127.0.0.1:$PORT" "$tmp/q.txt" --client raw --mode "$m" \
    --per-request "$per" --rate "$rate" --conns "$conns" --duration "$DUR" --name "$name" >"$j" 2>>"$OUT/serveab-gen.log"
  c1=$(cpu "$spid"); t1=$(date +%s.%N)
  metrics >"$tmp/m1.txt" 2>/dev/null
  python3 - "$j" "$c0" "$c1" "$t0" "$t1" "$b" "$m" "${inproc:-0}" "$sum" <<'EOF' 2>/dev/null || awk -v f="$j" 'BEGIN{getline l <f; print "  " l}'
import json, sys
r = json.load(open(sys.argv[1]))
c = float(sys.argv[3]) - float(sys.argv[2]); w = float(sys.argv[5]) - float(sys.argv[4])
req = r["qps"] * r["wall_s"] / r["queries_per_request"]
ip = float(sys.argv[8])
pct = f'{100*r["qps"]/ip:5.1f}%' if ip > 0 else '    -'
g = lambda k: r.get(k, 0) / 1e6
line = (f'{sys.argv[7]:4} {sys.argv[6]:4} {r["level"]:6} offered {r["offered_rps"]:7.0f} conns {r["connections"]:5} q/s {r["qps"]:7.0f} inproc% {pct} '
        f'p50 {g("p50_ns"):6.2f} p90 {g("p90_ns"):6.2f} p99 {g("p99_ns"):7.2f} p99.9 {g("p999_ns"):7.2f} max {g("max_ns"):7.1f} '
        f'svc99 {g("service_p99_ns"):6.2f} lag99 {g("send_lag_p99_ns"):6.2f} ms')
print(line + f' srv {c/w:5.2f} cores {1e6*c/max(req,1):6.1f} us/req gen {r["client_cpu_s"]/r["wall_s"]:4.2f} cores '
      f'redials {r.get("redials", 0)} genRSS {r.get("gen_peak_rss_mb", 0):.0f}MB ok {100*r["success"]:.2f}% codes {r["codes"]}')
for e in r.get("errors") or []:
    print("       client error:", e)
open(sys.argv[9], "a").write(line + f' srv {c/w:.2f} cores {1e6*c/max(req,1):.1f} us/req ok {100*r["success"]:.2f}%\n')
EOF
  echo "     server:$(breakdown "$tmp/m0.txt" "$tmp/m1.txt")"
  if [ "$b" = new ] && grep -q '^qp_serve_gpu_device_fixed_seconds' "$tmp/m1.txt"; then
    ${genpin[@]+"${genpin[@]}"} "$bin/qp" bench pipebound "http://127.0.0.1:$PORT" --rate "$r80,$r60" | sed 's/^/     model: /' | tee -a "$sum"
  fi
}
# server BUILD-BINARY NAME: starts qp serve, waits until ready (90 s at most).
server() {
  local extra=${SERVE_FLAGS_NEW:-}
  [ "$2" = old ] && extra=${SERVE_FLAGS_OLD:-}
  [ "$2" = mid ] && extra=${SERVE_FLAGS_MID:-}
  [ "$2" = lean ] && extra=${SERVE_FLAGS_LEAN:---lean-http}
  # shellcheck disable=SC2086
  ${srvpin[@]+"${srvpin[@]}"} "$1" serve "$IDX" --addr "127.0.0.1:$PORT" --device "$DEVICE" --log-level warn ${SERVE_FLAGS:-} $extra >"$OUT/serveab-$m-$2-server.log" 2>&1 &
  spid=$!
  wait_serve "$spid" "$2" "$OUT/serveab-$m-$2-server.log"
}
want() { case " $LEVELS " in *" $1 "*) return 0 ;; esac; return 1; }
for m in ${MODES:-and or}; do
  if [ "$SECONDS" -gt 400 ]; then echo "== $m skipped (time: ${SECONDS}s)" | tee -a "$res"; continue; fi
  # shellcheck disable=SC2086
  timeout 100 ${srvpin[@]+"${srvpin[@]}"} "$bin/qp" bench serve "$IDX" "$tmp/q.txt" --device "$DEVICE" --mode "$m" --duration 1s ${INPROC_FLAGS:-} \
    --conns-one 64 --per-request 0 --fractions "" --many 0 2>&1 | grep "^in-process" | sed "s/^/$m /" | tee -a "$res" "$sum" >"$tmp/inproc"
  inproc=$(sed -n 's/.*): \([0-9.]*\) q\/s.*/\1/p' "$tmp/inproc" | head -1)
  [ -n "$inproc" ] || { echo "== $m: no in-process rate"; continue; }
  r80=$(awk -v r="$inproc" 'BEGIN{printf "%.0f", 0.8*r}')
  r60=$(awk -v r="$inproc" 'BEGIN{printf "%.0f", 0.6*r}')
  c80=$(awk -v r="$r80" -v m="$RATE_CONNS_MAX" 'BEGIN{c=int(0.1*r+0.999); c=(c>m?m:c); print (c<64?64:c)}')
  c60=$(awk -v r="$r60" -v m="$RATE_CONNS_MAX" 'BEGIN{c=int(0.1*r+0.999); c=(c>m?m:c); print (c<64?64:c)}')
  for b in $(for _ in $(seq "${ROUNDS:-1}"); do echo "$BUILDS"; done); do
    if [ "$SECONDS" -gt 470 ]; then echo "== $m $b skipped (time: ${SECONDS}s)" | tee -a "$res"; continue; fi
    exe=$bin/qp; [ "$b" = old ] && exe=$OLD; [ "$b" = mid ] && exe=$MID
    server "$exe" "$b" || continue
    {
      if want sat1; then level "$b" "$m" sat1 1 0 "$CONNS"; fi
      if want sat100; then level "$b" "$m" sat100 100 0 64; fi
      if want r80; then level "$b" "$m" r80 1 "$r80" "$c80"; fi
      if want r60; then level "$b" "$m" r60 1 "$r60" "$c60"; fi
      echo "     server process: $(grep -E '^(VmHWM|Threads)' "/proc/$spid/status" | tr -s ' \t' ' ' | paste -sd ' ')"
    } | tee -a "$res"
    kill -TERM "$spid"; wait "$spid"
    echo "== $m $b done (${SECONDS}s)" | tee -a "$res"
  done
done
echo "== summary (${SECONDS}s)" | tee -a "$res"
tee -a "$res" <"$sum"
