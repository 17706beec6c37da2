#!/usr/bin/env bash
# scripts/device/servep99.sh — issue 25's p99 <= 20 ms at 80% load (GPU AND,
# one query per request, the 10M topic-model gen index): the served
# batches' device cost beside the same batches run alone, with and without
# the CUDA owner thread on a core of its own, under a generator that says
# when it, not the server, is late. ONE call, under 9 minutes, on the
# 2-GPU kind (32 cores: the server on GPU 0 and the first 16 cores, the
# generator on the other 16; serve8) or the 1-GPU kind (16 cores: the
# server on 0-9, the generator on 10-15; serve7):
#   1. gen10m_topics (lib.sh; ~180 s cold, reused warm);
#   2. dfit.sh at SIZES (default "1000 2000 4000", REPS=1): the in-process
#      D(n) = a + b·n of one warm `qp bench query --profile` batch a size;
#   3. the in-process rate on the server's cores (qp bench serve's
#      in-process line, as serveab.sh), and r60/r80 = 60%/80% of it;
#   4. for each build of BUILDS (default "new": bin/dev/qp; "old": $OLD,
#      default /tmp/qp-old, main's qp carried as bin/dev/data/qp-old.xz),
#      ROUNDS times (default 1: "old new" twice is A B A B), and each server
#      configuration of CONFIGS (default "base pin poll prof"):
#      `qp serve --device gpu --lean-http` on SERVER_CPUS with
#        base  nothing more
#        pin   --owner-cpu auto (the owner thread on the highest of
#              SERVER_CPUS alone, the rest of the server on the others)
#        poll  --owner-cpu auto --owner-poll (the owner polls the stream
#              and keeps its Go P across the waits)
#        prof  --owner-cpu auto --owner-poll --gpu-profile (CUDA events per
#              phase: the served batches' own GPU time; r60 only, r80 too
#              with PROF_R80=1)
#        x:NAME:FLAGS  the flags FLAGS (comma-separated, e.g.
#              x:big:--owner-cpu,auto,--gpu-threshold,48M), named NAME
#      a 2 s warm-up at r60, then the levels of LEVELS (default "r60 r80") (DUR, default 4s)
#      by `qp bench load --client raw` on GEN_CPUS (GOMAXPROCS their
#      count) with rate × CONN_MS (default 50) ms connections and
#      --max-gen-lag GENLAG (default 2ms);
#   SERVER_CPUS and GEN_CPUS default by `nproc`: with 32 cores or more the
#   first half and the second (a server as large as its generator, so that
#   r80 is inside the server's capacity and the row measures the server),
#   else the first 5/8 and the rest (16 cores: 0-9 and 10-15). Every
#   command runs with CUDA_VISIBLE_DEVICES=$GPU (default 0): the server,
#   dfit and the in-process rate on one GPU, whatever the host has; dfit
#   on SERVER_CPUS, as the in-process rate;
#   5. per level: q/s, the client's p50/p99 (from the due time), send lag
#      p99, the generator's own lag p99 and short-of-connections count, the
#      server's own request p99 (its histogram's bucket) and breakdown, the
#      served batches' least-squares fits (GET /debug/batches over the
#      level: device phase, owner closure, stream waits, CUDA events, host
#      preparation; sizes and driver calls), and pipebound's p99 floor at
#      r80 and r60 from the served fit and from dfit's.
# Environment: SIZES, SERVER_CPUS, GEN_CPUS, CONFIGS, LEVELS, DUR, CONN_MS, GENLAG,
# LIMIT (queries, default 50000), IDX (default /tmp/g10m-topics.qp, built
# by lib.sh's gen10m_topics; another index is used as it is), DFIT_PREP ("a b" of the in-process host
# preparation for dfit's floor, default "0.6ms 0.42us": the twenty-sixth
# session's run 3), PORT, REGEN=1.
#
# Build (the Go machine, repository root; OLDREV the commit of the old
# build, e.g. main's):
#   bash scripts/device/build.sh && xz -T0 -c bin/dev/qp >bin/dev/data/qp.xz && rm bin/dev/qp bin/dev/*.test
#   rm -rf /tmp/qp-old-src && mkdir -p /tmp/qp-old-src && git archive OLDREV | tar -x -C /tmp/qp-old-src &&
#   (cd /tmp/qp-old-src && CGO_ENABLED=0 go build -o /tmp/qp-old ./cmd/qp) && xz -T0 -c /tmp/qp-old >bin/dev/data/qp-old.xz
# GPU machine, kind nvidia-h200-x2 (or the 1-GPU kind), carry ["bin/dev"]:
#   rm -f /tmp/qp /tmp/qp-old; bash scripts/device/unpack.sh; BUILDS="old new" ROUNDS=2 CONFIGS=poll bash scripts/device/servep99.sh
# Output: stdout (the summary) and $OUT/servep99.tar.xz (every log, the
# generator's JSON rows, /debug/batches' rows per level, dfit's logs).
# Read: per config, r80's client p99 (target <= 20 ms) beside its lag99
# and genlag99 (near 0: the row measures the server), the server's request
# p99, and "served: fit batch" (host preparation + device phase, what dfit's
# one batch holds) against "dfit D(n)": a served b near dfit's with pin/poll
# and above it in base says the owner thread's core (or P) was the
# difference; fit device/owner/owner_run/sync/finish/gpu say which phase
# holds a difference; the floors from both fits say what the pipeline can
# reach.
. scripts/device/lib.sh
T0=$(date +%s)
left() { echo $(( 530 - ($(date +%s) - T0) )); }
ulimit -n 1048576 2>/dev/null || ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
CONNS_MAX=$(( $(ulimit -n) - 2048 )) # a level's connections at most (serveab.sh's RATE_CONNS_MAX)
NCPU=$(nproc)
if [ "$NCPU" -ge 32 ]; then SPLIT=$(( NCPU / 2 )); else SPLIT=$(( NCPU * 5 / 8 )); fi
SERVER_CPUS=${SERVER_CPUS:-0-$(( SPLIT - 1 ))}
GEN_CPUS=${GEN_CPUS:-$SPLIT-$(( NCPU - 1 ))}
export CUDA_VISIBLE_DEVICES=${GPU:-0}
CONFIGS=${CONFIGS:-base pin poll prof}
LEVELS=${LEVELS:-r60 r80}
BUILDS=${BUILDS:-new}
OLD=${OLD:-/tmp/qp-old}
chmod +x "$OLD" 2>/dev/null # unpack.sh leaves /tmp/qp-old without the x bit
case " $BUILDS " in *" old "*) [ -x "$OLD" ] || { echo "servep99: no old build at $OLD (see the header)"; exit 1; } ;; esac
DUR=${DUR:-4s}
CONN_MS=${CONN_MS:-50}
GENLAG=${GENLAG:-2ms}
PORT=${PORT:-18080}
read -r PREP_A PREP_B <<<"${DFIT_PREP:-0.6ms 0.42us}"
command -v taskset >/dev/null || { echo "servep99: needs taskset (util-linux)"; exit 1; }
for l in "$SERVER_CPUS" "$GEN_CPUS"; do
  taskset -c "$l" true 2>/dev/null || { echo "servep99: CPU list '$l' is not valid here ($(nproc --all) cores)"; exit 1; }
done
GEN=$(taskset -c "$GEN_CPUS" nproc)
work=$(mktemp -d /tmp/servep99.XXXXXX)
trap 'rm -rf "$work"' EXIT
res=$work/servep99.txt
{ echo "servep99: $(head -2 "$OUT/device.txt" | tail -1); $(( $(wc -l <"$OUT/device.txt") - 1 )) GPU(s), CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; $NCPU cores; server on $SERVER_CPUS ($(taskset -c "$SERVER_CPUS" nproc) cores), generator on $GEN_CPUS (GOMAXPROCS $GEN); builds $BUILDS x ${ROUNDS:-1}; configs $CONFIGS; DUR $DUR; conns rate x ${CONN_MS} ms (at most $CONNS_MAX); --max-gen-lag $GENLAG"
  nvidia-smi topo -m 2>&1 | grep -E 'GPU[0-9]|Affinity' | head -9; } | tee "$res"
IDX=${IDX:-/tmp/g10m-topics.qp}
if [ "$IDX" = /tmp/g10m-topics.qp ]; then gen10m_topics || exit 1; fi
q=$bin/data/06.efficiency_topics.txt
head -n "${LIMIT:-50000}" "$q" >"$work/q.txt"

# 2. the in-process D(n) (dfit.sh; its files under $work/dfit).
mkdir -p "$work/dfit"
OUT=$work/dfit IDX=$IDX REPS=1 SIZES=${SIZES:-1000 2000 4000} BUDGET=120 taskset -c "$SERVER_CPUS" bash scripts/device/dfit.sh >"$work/dfit.out" 2>&1
grep -E '^and |D\(n\)' "$work/dfit.out" | sed 's/^/dfit: /' | tee -a "$res"
read -r DA DB < <(sed -n 's/^and: D(n) = \([0-9.-]*\) ms + \([0-9.-]*\) us.*/\1 \2/p' "$work/dfit.out")
[ -n "${DA:-}" ] || echo "dfit: no fit (see dfit.out)" | tee -a "$res"

# 3. the in-process rate on the server's cores.
timeout 100 taskset -c "$SERVER_CPUS" "$bin/qp" bench serve "$IDX" "$work/q.txt" --device gpu --mode and --duration 1s \
  --conns-one 64 --per-request 0 --fractions "" --many 0 2>&1 | grep "^in-process" | tee -a "$res" >"$work/inproc"
inproc=$(sed -n 's/.*): \([0-9.]*\) q\/s.*/\1/p' "$work/inproc" | head -1)
[ -n "$inproc" ] || { echo "no in-process rate"; exit 1; }
r80=$(awk -v r="$inproc" 'BEGIN{printf "%.0f", 0.8*r}')
r60=$(awk -v r="$inproc" 'BEGIN{printf "%.0f", 0.6*r}')
if [ -n "${DA:-}" ]; then
  # (a fit's negative intercept, sizes too alike or too few, is taken as 0)
  "$bin/qp" bench pipebound --device-a "$(awk -v a="$DA" 'BEGIN{print (a<0?0:a)}')ms" --device-b "${DB}us" --prep-a "$PREP_A" --prep-b "$PREP_B" --rate "$r80,$r60" |
    sed 's/^/dfit floor: /' | tee -a "$res"
fi

# debug_batches AFTER: GET /debug/batches?after=AFTER (text, floors at r80
# and r60) from the running server, the body only.
debug_batches() {
  exec 4<>"/dev/tcp/127.0.0.1/$PORT" || return
  printf 'GET /debug/batches?after=%s&format=text&rate=%s,%s HTTP/1.0\r\nHost: x\r\n\r\n' "$1" "$r80" "$r60" >&4
  sed '1,/^\r$/d' <&4
  exec 4<&-
}
# level CONFIG NAME RATE: one load level on the running server, then its
# row, the server's breakdown and the served batches' fits over the level.
level() {
  local cfg=$1 name=$2 rate=$3 conns j seq rc
  conns=$(awk -v r="$rate" -v ms="$CONN_MS" -v m="$CONNS_MAX" 'BEGIN{c=int(r*ms/1000+0.999); c=(c>m?m:c); print (c<64?64:c)}')
  j=$work/${cfg//\//-}-$name.json
  seq=$(debug_batches 0 | sed -n 's/^seq \([0-9]*\) .*/\1/p')
  metrics >"$work/m0.txt" 2>/dev/null
  GOMAXPROCS=$GEN timeout 120 taskset -c "$GEN_CPUS" "$bin/qp" bench load "http://127.0.0.1:$PORT" "$work/q.txt" --client raw \
    --mode and --rate "$rate" --conns "$conns" --duration "$DUR" --name "$name" --max-gen-lag "$GENLAG" >"$j" 2>>"$work/gen.log"
  rc=$?
  metrics >"$work/m1.txt" 2>/dev/null
  debug_batches "${seq:-0}" >"${j%.json}.batches"
  awk -v c="$cfg" -v n="$name" -v rc="$rc" -v f="$j" 'BEGIN{ getline l <f
    split("", v)
    m=split(l, kv, ","); for (i=1;i<=m;i++) { split(kv[i], p, ":"); k=p[1]; gsub(/[{}" ]/, "", k); x=p[2]; gsub(/[{}" ]/, "", x); v[k]=x }
    printf "%-8s %-3s offered %7.0f conns %5d q/s %7.0f p50 %6.2f p99 %7.2f ms lag99 %6.2f genlag99 %5.2f ms short %d ok %.2f%%%s\n",
      c, n, v["offered_rps"], v["connections"], v["qps"], v["p50_ns"]/1e6, v["p99_ns"]/1e6, v["send_lag_p99_ns"]/1e6,
      v["gen_lag_p99_ns"]/1e6, v["short_of_conns"], 100*v["success"], (rc != 0 ? "  GENERATOR LATE (rc " rc "): the row measures the generator" : "") }'
  echo "     server:$(breakdown "$work/m0.txt" "$work/m1.txt")"
  sed 's/^/     served: /' "${j%.json}.batches"
  [ -n "${DA:-}" ] && echo "     dfit D(n) = $DA ms + $DB us·n (in-process, the same machine)"
}
for b in $(for _ in $(seq "${ROUNDS:-1}"); do echo "$BUILDS"; done); do
exe=$bin/qp; [ "$b" = old ] && exe=$OLD
for c in $CONFIGS; do
  name=$c; case $c in x:*:*) name=${c#x:}; name=${name%%:*} ;; esac
  cfg=$name; [ "$BUILDS" = new ] || cfg=$b/$name # the rows' and files' name
  [ "$(left)" -gt 60 ] || { echo "== $cfg skipped (time)" | tee -a "$res"; continue; }
  flags=()
  case $c in
  base) ;;
  pin) flags=(--owner-cpu auto) ;;
  poll) flags=(--owner-cpu auto --owner-poll) ;;
  prof) flags=(--owner-cpu auto --owner-poll --gpu-profile) ;;
  x:*:*) IFS=, read -r -a flags <<<"${c#x:*:}" ;;
  *) echo "servep99: unknown config $cfg"; continue ;;
  esac
  log=$work/serve-${cfg//\//-}.log
  taskset -c "$SERVER_CPUS" "$exe" serve "$IDX" --addr "127.0.0.1:$PORT" --device gpu --lean-http \
    --log-level info ${flags[@]+"${flags[@]}"} >"$log" 2>&1 &
  spid=$!
  wait_serve "$spid" "$cfg" "$log" || continue
  {
    echo "== $cfg: $b qp serve --device gpu --lean-http ${flags[*]} ($(grep -o 'the CUDA owner thread.*' "$log" || echo 'owner not pinned'))"
    GOMAXPROCS=$GEN taskset -c "$GEN_CPUS" "$bin/qp" bench load "http://127.0.0.1:$PORT" "$work/q.txt" --client raw --mode and \
      --rate "$r60" --conns 4096 --duration 2s --name warm >/dev/null 2>&1
    case " $LEVELS " in *" r60 "*) level "$cfg" r60 "$r60" ;; esac
    if [ "$c" != prof ] || [ "${PROF_R80:-0}" = 1 ]; then case " $LEVELS " in *" r80 "*) level "$cfg" r80 "$r80" ;; esac; fi
    echo "     server process: $(grep -E '^(VmHWM|Threads)' "/proc/$spid/status" | tr -s ' \t' ' ' | paste -sd ' ')"
  } 2>&1 | tee -a "$res"
  kill -TERM "$spid"; wait "$spid"
  grep 'served batches' "$log" | tail -1 | sed 's/^/     at exit: /' | tee -a "$res"
done
done
# the level rows again, by level then run: old and new side by side
{ echo "summary (by level; the runs in order):"
  for l in $LEVELS; do grep -E "^[a-z0-9/]+ +$l offered" "$res" | sed 's/^/  /'; done; } | tee -a "$res.sum"
cat "$res.sum" >>"$res"
echo "total $(( $(date +%s) - T0 ))s" | tee -a "$res"
cp "$res" "$OUT/servep99.txt"
tar -C "$work" -cJf "$OUT/servep99.tar.xz" .
