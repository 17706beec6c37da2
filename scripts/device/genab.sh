#!/usr/bin/env bash
# scripts/device/genab.sh — the load generator's own effect: ONE server
# (bin/dev/qp serve --device gpu on lib.sh's gen10m, MODEL topics) loaded
# by the new raw generator (bin/dev/qp bench load: one shared open-loop
# schedule, connections dialed before the level) and by the old one
# ($OLD bench load: a schedule per connection, connections dialed at their
# first request, as the fifteenth session measured), interleaved new old
# new old, at the same offered rate with the same connections: OR at 80%
# of the in-process rate, AND at 60%, CONNS (default 4096, the fifteenth
# session's) connections each; DUR (default 4s) levels. Each line: the
# generator, q/s, p50/p99/max from the due time (and, new generator, the
# send lag p99), the in-server request p99 bucket is in the server's
# /metrics (not read here). Budget: gen ~160 s, then ~2 min.
# Run: carry bin/dev (qp.xz, qp-old.xz: see serveab.sh), then
#   rm -f /tmp/qp /tmp/qp-old; bash scripts/device/unpack.sh; bash scripts/device/genab.sh
source scripts/device/lib.sh
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
export MODEL=${MODEL:-topics}
OLD=${OLD:-/tmp/qp-old}
DUR=${DUR:-4s}
CONNS=${CONNS:-4096}
GEN=${GEN:-6}
PORT=${PORT:-18081}
gen10m || exit 1
chmod +x "$OLD" 2>/dev/null
head -n 50000 "$bin/data/06.efficiency_topics.txt" >/tmp/genab-q.txt
res=$OUT/genab.txt
cat >/tmp/genab.py <<'EOF'
import json, sys
r = json.load(sys.stdin)
g = lambda k: r.get(k, 0) / 1e6
print(f'  {r["level"]:3} generator: q/s {r["qps"]:8.0f} p50 {g("p50_ns"):7.2f} p99 {g("p99_ns"):7.2f} max {g("max_ns"):7.1f} '
      f'lag99 {g("send_lag_p99_ns"):6.2f} ms ok {100*r["success"]:.2f}% codes {r["codes"]}')
EOF
for m in or and; do
  frac=0.8; [ $m = and ] && frac=0.6
  ip=$(timeout 100 "$bin/qp" bench serve /tmp/g10m.qp /tmp/genab-q.txt --device gpu --mode $m --duration 1s --conns-one 64 \
    --per-request 0 --fractions "" --many 0 2>&1 | sed -n 's/^in-process.*): \([0-9.]*\) q\/s.*/\1/p')
  rate=$(awk -v r="$ip" -v f=$frac 'BEGIN{printf "%.0f", f*r}')
  echo "$m: in-process $ip q/s, offered $rate/s ($frac), $CONNS connections" | tee -a "$res"
  "$bin/qp" serve /tmp/g10m.qp --addr 127.0.0.1:$PORT --device gpu --log-level warn >"$OUT/genab-server.log" 2>&1 &
  spid=$!
  for _ in $(seq 900); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
  "$bin/qp" bench load "http://127.0.0.1:$PORT" /tmp/genab-q.txt --client raw --mode $m --rate "$rate" --conns "$CONNS" \
    --duration 2s >/dev/null 2>&1  # warm-up, not reported
  for g in new old new old; do
    exe=$bin/qp; [ $g = old ] && exe=$OLD
    GOMAXPROCS=$GEN timeout 60 "$exe" bench load "http://127.0.0.1:$PORT" /tmp/genab-q.txt --client raw --mode $m --rate "$rate" \
      --conns "$CONNS" --duration "$DUR" --name "$g" 2>>"$OUT/genab-gen.log" | python3 /tmp/genab.py | tee -a "$res"
  done
  kill -TERM $spid; wait $spid
done
