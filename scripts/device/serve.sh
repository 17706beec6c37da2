#!/usr/bin/env bash
# scripts/device/serve.sh — issue #25's proof on the GPU machine: qp serve
# under load on loopback (qp bench serve), GPU and 16 CPU cores, on the gen
# index of 10M documents (lib.sh's gen10m: the independent model, built in
# under 200 s, reused on a warm machine) with the TREC 2006 efficiency
# queries, top-10.
#
# The load generator runs as a separate process (qp bench load, --gen-procs
# GEN cores, default 6 of the 16: GOMAXPROCS; the server keeps the rest),
# and each row says the server's own CPU use. Its client is CLIENT
# (default raw: plain HTTP/1.1 connections, about a third of vegeta's CPU
# per request; CLIENT=vegeta as in the twelfth session, when vegeta's 6
# cores at ~60 µs a request capped the offered rate near the 101k q/s that
# GPU AND reached). Levels of DUR (default 5s):
#   - saturation, one query per request, at CONNS_GPU (64,1024,4096) or
#     CONNS_CPU (64,1024) connections: 64 connections keep at most 64
#     queries in flight, which is what limited the GPU before (24% of
#     in-process); the best level sets the fixed rates;
#   - saturation, 100 queries per request, 64 connections;
#   - 25/50/80% of the best one-query rate (p99 at 80%: target <= 20 ms);
#   - 10,000 connections at once (codes: 503 = shed, overloaded; the
#     "listen queue overflowed" line counts handshakes the kernel dropped);
#   plus the in-process batch throughput (qp.Stream, best of 3) and its CPU
#   per query, the figures HTTP is compared with (target >= 80%).
# Runs, in order of importance (each cut at 150 s; none starts after 420 s
# of the script, gen included, so the call ends within 10 minutes):
#   gpu-and         --device gpu --mode and, all levels
#   gpu-or          the same in OR
#   cpu-and         --device cpu (first 20,000 queries)
#   gpu-and-inproc  GPU AND, one-query saturation only, the generator in
#                   the server's process (vegeta as a library, the old way):
#                   how much the in-process generator costs
#   gpu-and-before  GPU AND batched as before (no --batch-budget, 2 batches
#                   in flight) at 4096 connections, 100/request and 80%:
#                   the A/B of the GPU's batching changes
#   cpu-and-batched the CPU as the server batched it before (2 batches of
#                   up to 4096 in flight, no budget), saturation only: the
#                   A/B of the CPU's one-query-per-worker default
#   cpu-or          (CPU OR answers about 2,000 q/s)
# Budget: gen 10M 100-200 s when cold (0 warm), then about 70 + 70 + 50 +
# 40 + 40 + 30 + 70 s: 6.5-9.5 minutes cold (the last runs skipped if
# late), about 6 warm.
#
# Run (after scripts/device/build.sh here; carry bin/dev):
#   bash scripts/device/unpack.sh; bash scripts/device/serve.sh
# Output: $OUT/serve-RUN.txt (the table: look at the "HTTP at saturation /
# in-process" and "server CPU per query" lines, p99 of the 80% row, and the
# codes of the 10000-connection row) and serve-RUN.json (rows), $OUT/gen.log,
# $OUT/device.txt, $OUT/netstat-{before,after}.txt.
source scripts/device/lib.sh
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
echo "open files: $(ulimit -n); somaxconn: $(cat /proc/sys/net/core/somaxconn 2>/dev/null); cores: $(nproc)"
gen10m || exit 1
q=$bin/data/06.efficiency_topics.txt
DUR=${DUR:-5s}
GEN=${GEN:-6}
cat /proc/net/netstat >"$OUT/netstat-before.txt" 2>/dev/null
# A run starts only while SECONDS (since the script began, gen included)
# is at most 420: with its 150 s cut the call ends within 10 minutes.
run() {
  local name=$1
  shift
  if [ "$SECONDS" -gt 420 ]; then echo "== $name skipped (time: ${SECONDS}s)"; return; fi
  timeout 150 "$bin/qp" bench serve /tmp/g10m.qp "$q" --duration "$DUR" --json "$OUT/serve-$name.json" --client "${CLIENT:-raw}" "$@" \
    >"$OUT/serve-$name.txt" 2>&1
  echo "== $name (exit $?, ${SECONDS}s)"
  grep -E "^in-process|^server:|^saturation|^[0-9]+% of|connections  |^HTTP|^server CPU|overflowed" "$OUT/serve-$name.txt"
}
G=${CONNS_GPU:-64,1024,4096}
C=${CONNS_CPU:-64,1024}
run gpu-and --device gpu --mode and --limit 50000 --gen-procs "$GEN" --conns-one "$G"
run gpu-or --device gpu --mode or --limit 50000 --gen-procs "$GEN" --conns-one "$G"
run cpu-and --device cpu --mode and --limit 20000 --gen-procs "$GEN" --conns-one "$C"
run gpu-and-inproc --device gpu --mode and --limit 50000 --gen-procs 0 --conns-one "$G" --per-request 0 --fractions "" --many 0
run gpu-and-before --device gpu --mode and --limit 50000 --gen-procs "$GEN" --conns-one 4096 --batch-budget -1ns \
  --inflight 2 --many 0 --fractions 0.8
run cpu-and-batched --device cpu --mode and --limit 20000 --gen-procs "$GEN" --conns-one "$C" \
  --inflight 2 --batch-max 4096 --batch-budget -1ns --per-request 0 --fractions "" --many 0
run cpu-or --device cpu --mode or --limit 20000 --gen-procs "$GEN" --conns-one "$C"
cat /proc/net/netstat >"$OUT/netstat-after.txt" 2>/dev/null
