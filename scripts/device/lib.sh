# scripts/device/lib.sh — the common start of the device scripts, sourced
# from the repository root: OUT (default /tmp/out) exists, bin is the
# absolute path of the binaries (scripts/device/build.sh: $BIN or bin/dev),
# QP_QUERIES names its TREC query logs (for the Go tests), and
# $OUT/device.txt holds the GPU as nvidia-smi describes it.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
bin=$PWD/${BIN:-bin/dev}
export QP_QUERIES=$bin/data
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv \
  >"$OUT/device.txt" 2>&1

# gen_index IDX LIMIT FLAG...: builds IDX by `qp gen FLAG...` with the
# TREC 2005/2006 query terms within LIMIT seconds, unless a warm machine
# kept it (REGEN=1 rebuilds it); into IDX.tmp first, so that a failed or
# cut run leaves no index behind; log in $OUT/gen.log.
gen_index() {
  local idx=$1 limit=$2 t
  shift 2
  if [ -s "$idx" ] && [ "${REGEN:-0}" != 1 ]; then echo "reusing $idx"; return 0; fi
  t=$(date +%s)
  timeout "$limit" "$bin/qp" gen "$@" --out "$idx.tmp" --quiet --queries "$bin/data/05.efficiency_topics.txt" \
    --queries "$bin/data/06.efficiency_topics.txt" >"$OUT/gen.log" 2>&1 ||
    { echo "gen failed or ran past $limit s"; tail -5 "$OUT/gen.log"; rm -f "$idx.tmp"; return 1; }
  mv "$idx.tmp" "$idx"
  echo "gen: $(( $(date +%s) - t ))s: $(tail -1 "$OUT/gen.log")"
}

# gen10m builds /tmp/g10m.qp, the GOV2-like gen index of ${DOCS:-10M}
# documents (MODEL, default independent; issue #4's index).
gen10m() { gen_index /tmp/g10m.qp 200 --model "${MODEL:-independent}" --docs "${DOCS:-10000000}"; }

# gen10m_topics builds /tmp/g10m-topics.qp, the topic-model gen index of
# ${DOCS:-10M} documents (builder memory ${MEM:-40G}; ~3-5 min on 16 cores).
gen10m_topics() {
  gen_index /tmp/g10m-topics.qp 330 --model topics --docs "${DOCS:-10000000}" --mem "${MEM:-40G}"
}

# cpu_ratio KEY VARIANT SUM [BASE]: per interleaved pair, the process CPU
# per query of VARIANT's run against BASE's (default old) for KEY (SUM's
# lines "V KEY: rc=… process CPU Xµs/query …", as hostcpu.sh, hostq.sh and
# hostcut.sh write them), and their mean; the line is appended to SUM.
cpu_ratio() {
  awk -v m="$1" -v v="$2" -v b="${4:-old}" '$2 == m":" { for (i = 1; i <= NF; i++) if ($i == "CPU" && $(i+1) ~ /\/query/) {
        x = $(i+1); sub(/\/query.*/, "", x); f = 1
        if (x ~ /ns$/) f = 0.001; else if (x ~ /ms$/) f = 1000
        gsub(/[^0-9.]/, "", x); if ($1 == b) o[++no] = x * f; else if ($1 == v) w[++nw] = x * f } }
    END { s = ""; t = 0; for (i = 1; i <= no && i <= nw; i++) { s = s sprintf(" %.2f (%.2f/%.2f µs)", w[i] / o[i], w[i], o[i]); t += w[i] / o[i] }
      if (i > 1) printf "ratio %s: process CPU per query %s/%s, pairs:%s; mean %.2f\n", m, v, b, s, t / (i - 1) }' "$3" | tee -a "$3"
}

# metrics: the /metrics of the qp serve on 127.0.0.1:$PORT (bash's
# /dev/tcp: no curl needed). serveab.sh, servep99.sh.
metrics() {
  exec 3<>"/dev/tcp/127.0.0.1/$PORT" || return
  printf 'GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n' >&3
  cat <&3
  exec 3<&-
}
# breakdown BEFORE AFTER (two metrics snapshots): mean and p99 (bucket upper bound) of the
# histograms' deltas, in ms (a histogram the build lacks prints n/a).
breakdown() {
  awk 'FNR==1{f++} /^qp_serve_batch_size_(sum|count)/ { if (f==1) a[$1]=$NF; else b[$1]=$NF-a[$1] }
  /^qp_serve_batch_closes_total/ { r=$1; sub(/.*reason="/, "", r); sub(/".*/, "", r); if (f==1) ca[r]=$NF; else { cl[r]=$NF-ca[r]; seenc=1 } }
  /^qp_serve_(queue_wait|batch_duration|request_duration|answer_wake|go_sched_latencies|go_gc_pauses|batch_prepare|batch_device_wait|batch_device|batch_owner_run)_seconds/ {
    v=$NF
    if ($1 ~ /request_duration/ && $1 !~ /endpoint="search"/ && $1 !~ /endpoint="batch"/) next
    key=$1; if (f==1) a[key]=v; else b[key]=v-a[key] }
  END {
    n=split("queue_wait batch_duration request_duration answer_wake go_sched_latencies go_gc_pauses batch_prepare batch_device_wait batch_device batch_owner_run", hs, " ")
    for (i=1;i<=n;i++) { h="qp_serve_" hs[i] "_seconds"; s=0; c=0; seen=0; delete le
      if (i==7) printf "\n       pipelined GPU batches:"
      for (k in b) { if (index(k, h "_sum")==1) s+=b[k]; if (index(k, h "_count")==1) { c+=b[k]; seen=1 }
        if (index(k, h "_bucket")==1) { m=k; sub(/.*le="/, "", m); sub(/".*/, "", m); le[m]+=b[k] } }
      if (!seen) { printf " %s n/a", hs[i]; continue }
      p=""; if (c>0) { best=""; for (m in le) if (le[m] >= 0.99*c && (best=="" || m+0 < best+0)) best=m; p=best }
      printf " %s mean %.3f p99<=%s", hs[i], (c>0 ? 1000*s/c : 0), (p=="" ? "-" : (p=="+Inf" ? p : sprintf("%.2f", 1000*p))) }
    printf " (ms); batches %d, mean size %.1f", b["qp_serve_batch_size_count"], (b["qp_serve_batch_size_count"]>0 ? b["qp_serve_batch_size_sum"]/b["qp_serve_batch_size_count"] : 0)
    if (seenc) { printf "; closed by"; n=split("idle device threshold cap wait drain", rs, " "); for (i=1;i<=n;i++) printf " %s %d", rs[i], cl[rs[i]] }
    printf "\n" }' "$1" "$2"
}
# wait_serve PID NAME LOG: waits until the qp serve PID answers /metrics
# on 127.0.0.1:$PORT (90 s at most); says why not (its LOG's tail).
wait_serve() {
  for _ in $(seq 900); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
      metrics | grep -q "^HTTP/1.[01] 200" && return 0
    fi
    kill -0 "$1" 2>/dev/null || { echo "server $2 exited"; tail -3 "$3"; return 1; }
    sleep 0.1
  done
  echo "server $2 not ready in 90 s"; return 1
}
