#!/usr/bin/env bash
# What the gateway costs per request: four instant engines (kvgate sim
# --profile instant, the real Qwen3 tokenizer, KV events), wrk at 64
# connections, non-streaming chat requests with max_tokens 1. For each policy
# (round_robin, cache_aware, kv_aware with KV events, prefix_affinity) and
# 1 and 2 gateway threads, each workload (bench/gateway/workloads.py: short,
# 6k shared system prompt, 30k conversations, 100k unique) is measured: req/s,
# the gateway's CPU per request (/proc/PID/stat utime+stime before/after),
# (workload 30k-msg: the 30k conversations as Anthropic Messages requests to
# /v1/messages, against 30k through chat in the same run),
# the engines' CPU per request, p50/p99 latency and what the gateway adds to
# the same workload sent straight to one engine. Then a perf profile of the
# load phase per workload (kv_aware): phases and top functions. Writes
# bench/results/gateway-cost.md. The head-of-line effect is hol.sh's.
#   bash bench/gateway/cost.sh [SECONDS per wrk run, default 4] [POLICIES] [THREADS]
#   KVG_COST_PROFILE=0 skips the profile; KVG_COST_OUT sets the result file;
#   KVG_COST_WORKLOADS the workloads (short 6k 30k 30k-msg 100k; a workload named twice
#   runs twice, and the targets average its rows). A policy POL@base runs the gateway
#   binary KVG_COST_BASE_BIN instead of KVG_BIN: a before/after of one change
#   in one run, e.g. KVG_COST_BASE_BIN=/tmp/kvgate-old cost.sh 3 "kv_aware@base kv_aware".
set -euo pipefail
cd "$(dirname "$0")/../.."
# The command as given, with the settings from the environment, for the report.
CMDLINE="bash bench/gateway/cost.sh $*"
for v in KVG_COST_WORKLOADS KVG_COST_PROFILE KVG_COST_BASE_BIN KVG_COST_SERVE_ARGS; do
  [ -n "${!v:-}" ] && CMDLINE="$v=\"${!v}\" $CMDLINE"
done
DUR=${1:-4}
# kv_aware:nocache is kv_aware with --tokenizer-cache-bytes 0 (the uncached
# tokenizer: the baseline of the same run).
POLICIES=${2:-"round_robin cache_aware kv_aware:nocache kv_aware prefix_affinity"}
THREADS=${3:-"1 2"}
PROFILE=${KVG_COST_PROFILE:-1}
OUT=${KVG_COST_OUT:-bench/results/gateway-cost.md}
BIN=${KVG_BIN:-build/release/kvgate}
[ -x "$BIN" ] || make -s -j2 BUILD=release build/release/kvgate
. bench/gateway/common.sh
ticks() { # PIDs... -> utime+stime in clock ticks, summed
  local t=0 p
  for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
  echo "$t"
}
HZ=$(getconf CLK_TCK)
python3 bench/gateway/workloads.py "$W/wl"
WORKLOADS=${KVG_COST_WORKLOADS:-"short 6k 30k 30k-msg 100k"}
UNIQUE_WL=$(printf '%s\n' $WORKLOADS | awk '!seen[$0]++' | tr '\n' ' ')

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

# The endpoint a workload's bodies go to.
wl_path() { case $1 in *-msg) echo /v1/messages ;; *) echo /v1/chat/completions ;; esac; }
# wrk against URL with workload WL, C connections, D seconds -> RESULT line
run_wrk() {
  local url=$1 wl=$2 c=$3 d=$4
  BODIES="$W/wl/$wl.tsv" WRK_PATH=$(wl_path "$wl") wrk -t1 -c"$c" -d"${d}s" --timeout 30s \
    -s bench/gateway/body.lua "$url" |
    grep '^RESULT' || echo "RESULT reqs=0 secs=1 errs=1 p50=nan p99=nan"
}
# GET /health (the gateway's loop only) at 1 connection for D seconds -> RESULT line
run_health() {
  wrk -t1 -c1 -d"${2}s" --timeout 30s -s bench/gateway/health.lua "$1/health" |
    grep '^RESULT' || echo "RESULT reqs=0 secs=1 errs=1 p50=nan p99=nan"
}

start_gw() { # policy[:nocache][@base] threads [serve args...]
  local bin=$BIN p1=${1%@base}
  [ "$p1" != "$1" ] && bin=${KVG_COST_BASE_BIN:?POL@base needs KVG_COST_BASE_BIN}
  set -- "$p1" "${@:2}"
  local extra=(--worker-urls "${CURLS[@]}") pol=${1%%:*}
  if [ "$pol" = kv_aware ]; then
    extra=(--worker-urls "${URLS[@]}" --kv-events-endpoints "${EPS[@]}")
    # A gateway that subscribes to warm engines cannot index what they cached
    # before it listened (a stored block's parent it never saw has no chained
    # hash), so each kv_aware gateway starts with the engines' caches empty:
    # its index then holds what they hold, and its lookups find it.
    for u in "${URLS[@]}"; do curl -sf -o /dev/null -X POST "$u/reset_prefix_cache"; done
  fi
  [ "$pol" != "$1" ] && extra+=(--tokenizer-cache-bytes 0)
  GWP=$(port)
  "$bin" serve --port "$GWP" --threads "$2" --policy "$pol" \
    "${extra[@]}" "${TOK[@]}" --block-size 16 --no-access-log --log-level warn \
    ${KVG_COST_SERVE_ARGS:-} "${@:3}" >/dev/null & GWPID=$!
  wait_url "http://127.0.0.1:$GWP/readiness"
}

# Straight to one engine at one connection: the latency the gateway's is
# compared with (at 64 connections queueing would hide it).
declare -A D50 D99
for wl in $UNIQUE_WL; do
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
      p0=${pol%@base}
      [ "${p0%%:*}" = kv_aware ] && es=("${SIMS[@]}") kind=q
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

# Profile: perf on the running gateway (kv_aware, 1 thread) during the load
# phase only (after start-up and a warm-up): the top functions by own
# samples, and the phases' inclusive shares from the call graphs.
PROF=()
PHASES="kvg_rinput_parse:JSON-parse kvg_api_to_chat:to-chat kvg_jinja_chat_render_json:render kvg_tok_encode_blocks:tokenize kvg_kv_hash_range:block-hash kvg_kv_index_match_tiers:index-lookup kvg_pool_pick:pick"
if [ "$PROFILE" = 1 ] && perf stat -e task-clock true >/dev/null 2>&1; then
  for wl in $UNIQUE_WL; do
    start_gw kv_aware 1
    run_wrk "http://127.0.0.1:$GWP" "$wl" 16 1 >/dev/null
    run_wrk "http://127.0.0.1:$GWP" "$wl" 16 $((DUR + 2)) >"$W/prof.wrk" &
    l=$!
    sleep 1
    perf record -q -F 499 --call-graph dwarf,16384 -p "$GWPID" -o "$W/perf.$wl" -- sleep "$DUR" \
      >/dev/null 2>&1 || true
    wait $l || true
    stop_gw
    top=$(perf report -i "$W/perf.$wl" --no-children --stdio -g none 2>/dev/null | python3 -c '
import re, sys
share = {}
for line in sys.stdin:
    m = re.match(r"\s*([\d.]+)%\s+\S+\s+(\S+)\s+\[.\]\s+(\S+)", line)
    if m:
        sym = m.group(3) if not m.group(3).startswith("0x") else m.group(2) + ":?"
        share[sym] = share.get(sym, 0.0) + float(m.group(1))
top = sorted(share.items(), key=lambda kv: -kv[1])[:8]
print("; ".join(f"{k} {v:.1f}%" for k, v in top))' || true)
    phases=$(perf report -i "$W/perf.$wl" --children --stdio -g none 2>/dev/null | python3 -c '
import re, sys
want = dict(p.split(":") for p in sys.argv[1].split())
got = {}
for line in sys.stdin:
    m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%\s+\S+\s+\S+\s+\[.\]\s+(\S+)", line)
    if m and m.group(3) in want and m.group(3) not in got:
        got[m.group(3)] = m.group(1)
none = "0"
print("; ".join(want[k] + " " + got.get(k, none) + "%" for k in want))' "$PHASES" || true)
    PROF+=("| $wl | $(field reqs "$(cat "$W/prof.wrk")") | $phases | $top |")
    echo "${PROF[-1]}" >&2
  done
fi

# The issue's targets against this run's own baselines.
TARGETS=$(printf '%s\n' "${ROWS[@]}" | python3 bench/gateway/targets.py "$DUR")

{
  echo "# Gateway cost per request"
  echo
  echo "Command: \`$CMDLINE\` ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores shared with other"
  echo "work: figures are noisy, compare rows of one run). Four \`kvgate sim --profile instant\` engines"
  echo "(1 us steps) behind \`kvgate serve\` (block size 16, the real Qwen3 tokenizer): for kv_aware"
  echo "four with the Qwen3 tokenizer and KV events, for the other policies four with the byte"
  echo "tokenizer (cheap for the engine, so the gateway is the bottleneck)."
  echo "wrk (1 thread) at 64 connections for ${DUR} s after a 1 s warm-up, non-streaming chat, max_tokens 1."
  echo "Workloads (bench/gateway/workloads.py, prompt tokens): short ~70; 6k = one 6,000-token system"
  echo "prompt shared by all + a ~100-token question; 30k = 8 conversations of 27k-30k tokens whose"
  echo "earlier turns were sent before; 30k-msg = the same 30k conversations as Anthropic Messages"
  echo "requests (POST /v1/messages: the system prompt as \`system\`, max_tokens 1), which the gateway"
  echo "converts to the same chat request and so renders to the same prompts; 100k = ~100,000-token"
  echo "prompts unique from their first byte."
  echo "Every request differs (a counter in its last message or, for 100k, its first)."
  echo "gw CPU = the gateway's utime+stime per request; engines CPU = the four sims' together."
  echo "p50/p99 at 64 connections; added p50/p99 = the latency at 1 connection minus the same"
  echo "workload's at 1 connection straight to one engine of the same kind (direct p50/p99 ms,"
  echo "Qwen3 engine: $(for wl in $UNIQUE_WL; do printf '%s %.2f/%.2f; ' "$wl" "${D50[q$wl]}" "${D99[q$wl]}"; done)"
  echo "byte engine: $(for wl in $UNIQUE_WL; do printf '%s %.2f/%.2f; ' "$wl" "${D50[c$wl]}" "${D99[c$wl]}"; done))."
  echo
  echo "| policy | threads | workload | req/s | gw CPU ms/req | engines CPU ms/req | p50 ms | p99 ms | added p50 ms | added p99 ms | errors |"
  echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${ROWS[@]}"
  echo
  echo "Head-of-line (short requests beside 30k/100k ones): \`bash bench/gateway/hol.sh\`,"
  echo "[gateway-hol.md](gateway-hol.md)."
  echo
  echo "## Against the issue's targets (this run)"
  echo
  echo "Baselines from the same run: kv_aware:nocache (--tokenizer-cache-bytes 0), round_robin"
  echo "(the plain proxy hop)."
  echo
  echo "| target | baseline, 1 / 2 threads | kvgate, 1 / 2 threads | met |"
  echo "|---|---|---|---|"
  echo "$TARGETS"
  if [ ${#PROF[@]} -gt 0 ]; then
    echo
    echo "## Profile (perf, kv_aware, 1 thread, 16 connections): where the gateway's CPU goes"
    echo
    echo "\`perf record -F 499 --call-graph dwarf -p GATEWAY\` for ${DUR} s of load, after start-up and"
    echo "a warm-up (no start-up in the samples). Phases: inclusive share of the gateway's samples"
    echo "(kernel and libuv included in the total: the sockets, the thread hand-offs); top"
    echo "functions: own samples (?: a symbol-less libcjson/libc address)."
    echo
    echo "| workload | requests in the run | phases (inclusive) | top functions (own samples) |"
    echo "|---|---:|---|---|"
    printf '%s\n' "${PROF[@]}"
  fi
} >"$OUT"
cat "$OUT"
