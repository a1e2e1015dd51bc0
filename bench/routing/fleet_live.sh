#!/usr/bin/env bash
# Many kvgate replicas, live (issue 37): 8 `kvgate sim` engines, and in
# front of them, in one run and with the same workload, (a) one `kvgate
# serve` (--threads 1 as each replica, and --threads 3: the three replicas'
# CPU in one process), (b) three with --peers between them, (c) three again with one
# SIGKILLed mid-run, twice: behind haproxy as usually configured (retries 3,
# option redispatch: a refused connection is sent to another replica) and
# with haproxy's retries off (every failure reaches the client as a 503);
# always haproxy in HTTP mode, round robin per request (one server for (a)),
# health-checked every 200 ms. Workloads:
# llm-d's shared-prefix benchmark (llmd-73's 150 groups of 6,000 + 1,200
# tokens on 8 engines) and chat sessions, each with the engines' KV events
# and without (the approximate index and the exchange). Fresh engines and
# gateways for every run: no run inherits another's caches.
#
# The client is `kvgate bench --mode live --target` with --retries 2, the
# openai SDK's default and its rules (src/bench/routing/live.c). For each run
# it reports p90 TTFT, the cache-hit rate from the answers' cached tokens,
# and from the engines' own counters (vllm:prefix_cache_*), each engine's
# share of the requests, and haproxy's count per replica. The kill run adds:
# requests lost before any answer byte (must be 0), requests whose answer
# broke midway (in flight on the killed replica: the SDK does not retry
# those), the client's retries and haproxy's, and the stage after the kill.
# Writes bench/results/fleet-live.json and prints the tables for
# bench/results/fleet.md (bench/routing/fleet_live_table.py).
#
#   nice -n 10 bash bench/routing/fleet_live.sh
# SPEED (default 4: engines run 4x real time, times are engine time), SEED
# (default 1: the workload's and the engines'),
# WORKLOADS="llmd chat", KV="events none", MODES="one one3 three kill killnr",
# OUT=... narrow or move it (mode apart: the replicas without --peers, what
# the exchange costs is the CPU over it); REPLICAS (default 3) the replicas
# of every mode but one and one3; POLICY (default prefix_affinity) the
# gateways' --policy; EXCH_MS (default 100 ms of engine time) their
# --exchange-ms; KEEP=1 keeps the logs and scrapes;
# KVG_BIN=path and HAPROXY=path override the binaries. About 12 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=${KVG_BIN:-build/release/kvgate}
OUT=${OUT:-bench/results/fleet-live.json}
SPEED=${SPEED:-4}
SEED=${SEED:-1}
POLICY=${POLICY:-prefix_affinity}
export POLICY # recorded in each row (fleet_live_table.py)
HAPROXY=${HAPROXY:-$(command -v haproxy || echo /usr/sbin/haproxy)}
if [ ! -x "$HAPROXY" ]; then
  echo "bench/routing/fleet_live.sh: skipped: haproxy is not installed (the balancer in front of the replicas)" >&2
  exit 0
fi
[ -x "$BIN" ] || { echo "bench/routing/fleet_live.sh: $BIN not built (make BUILD=release)" >&2; exit 1; }
W=$(mktemp -d /tmp/kvgate-fleet-live.XXXXXX)
export KVG_PORTS_FILE=$W/ports
PIDS=()
stop() { # stop PID...: TERM, then KILL what is left after 5 s
  local p i
  for p in "$@"; do kill "$p" 2>/dev/null || true; done
  for i in $(seq 1 50); do
    local alive=0
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for p in "$@"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
}
cleanup() {
  [ ${#PIDS[@]} = 0 ] || stop "${PIDS[@]}"
  if [ -n "${KEEP:-}" ]; then echo "fleet_live: logs and scrapes kept in $W" >&2; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
port() { python3 tests/fixtures/free_port.py; }
wait_up() { # URL: bounded
  local i
  for i in $(seq 1 200); do curl -sf -o /dev/null -m 1 "$1" && return 0; sleep 0.1; done
  echo "bench/routing/fleet_live.sh: $1 did not come up" >&2
  return 1
}

# The workloads: llm-d's shape as llmd-73 (8 engines, 150 groups, the warm-up
# set at 15 QPS), 32 output tokens (every token is one SSE chunk through
# haproxy and kvgate on 2 cores); chat as the routing suite's (20 system
# prompts of 2,000 tokens, 8 turns of 300), 32 output tokens. Stages: a
# warm-up, then two equal measured stages; the kill comes at the second's
# start.
declare -A FLAGS STAGE WARM_S STAGE_S
FLAGS[llmd]="--workload shared_prefix --groups 150 --prompts-per-group 5 --system-prompt-len 6000 --question-len 1200 --ignore-eos --output-len 32 --timeout 60"
STAGE[llmd]="15x50,20x20,20x20"
WARM_S[llmd]=50
STAGE_S[llmd]=20
FLAGS[chat]="--workload chat --turns 8 --user-len 300 --chat-groups 20 --chat-system-len 2000 --think-secs 5 --output-len 32 --max-context 16000 --timeout 60"
STAGE[chat]="2x30,3x30,3x30"
WARM_S[chat]=30
STAGE_S[chat]=30
PROFILE=qwen3-32b-h100-tp2-roofline
BLOCK=64
SCRAPE_MS=$(python3 -c "print(max(10, int(100 / $SPEED)))") # 100 ms of engine time
EXCH_MS=${EXCH_MS:-$SCRAPE_MS} # the replicas' --exchange-ms (wall time)
export EXCH_MS                  # recorded in each row (fleet_live_table.py)

SIMS=() EVS=() SIM_PIDS=()
start_sims() {
  SIMS=() EVS=() SIM_PIDS=()
  local i p e
  for i in $(seq 0 7); do
    p=$(port) e=$(port)
    "$BIN" sim --host 127.0.0.1 --port "$p" --model kvgate-sim --profile "$PROFILE" \
      --block-size "$BLOCK" --speed "$SPEED" --seed "$((1000 * SEED + i))" \
      --kv-events-endpoint "tcp://127.0.0.1:$e" --log-level warn >"$W/sim-$i.log" 2>&1 &
    SIM_PIDS+=($!) PIDS+=($!)
    SIMS+=("http://127.0.0.1:$p") EVS+=("tcp://127.0.0.1:$e")
  done
  for p in "${SIMS[@]}"; do wait_up "$p/v1/models"; done
}

GW=() GW_PIDS=() HA_PID="" HA_PORT="" ST_PORT=""
start_gateways() { # N KV(events|none) HAPROXY_RETRIES THREADS PEERS(1|0)
  local n=$1 kv=$2 retries=$3 threads=$4 i
  GW=() GW_PIDS=()
  local ports=()
  for i in $(seq 1 "$n"); do ports+=("$(port)"); done
  local peers=""
  if [ "$n" -gt 1 ] && [ "$5" = 1 ]; then
    for i in "${ports[@]}"; do peers+="${peers:+,}http://127.0.0.1:$i"; done
  fi
  for i in "${ports[@]}"; do
    local args=(serve --host 127.0.0.1 --port "$i" --threads "$threads" --policy "$POLICY"
      --block-size "$BLOCK" --load-monitor-interval-ms "$SCRAPE_MS" --health-check-interval-secs 1
      --no-access-log --log-level warn --worker-urls "${SIMS[@]}")
    [ "$kv" = events ] && args+=(--kv-events-endpoints "${EVS[@]}")
    [ -n "$peers" ] && args+=(--peers "$peers" --peer-token "fleet-live-$$" --exchange-ms "$EXCH_MS")
    "$BIN" "${args[@]}" >"$W/serve-$i.log" 2>&1 &
    GW_PIDS+=($!) PIDS+=($!)
    GW+=("http://127.0.0.1:$i")
  done
  for i in "${GW[@]}"; do wait_up "$i/readiness"; done
  HA_PORT=$(port) ST_PORT=$(port)
  {
    echo "global"
    echo "  maxconn 4000"
    echo "  nbthread 1"
    echo "defaults"
    echo "  mode http"
    echo "  option http-keep-alive"
    echo "  timeout connect 1s"
    echo "  timeout client 300s"
    echo "  timeout server 300s"
    echo "  retries $retries"
    if [ "$retries" -gt 0 ]; then echo "  option redispatch 1"; fi
    echo "frontend fe"
    echo "  bind 127.0.0.1:$HA_PORT"
    echo "  default_backend replicas"
    echo "backend replicas"
    echo "  balance roundrobin"
    echo "  option httpchk GET /health"
    echo "  default-server check inter 200ms fall 2 rise 2"
    i=0
    for g in "${GW[@]}"; do echo "  server r$i ${g#http://}"; i=$((i + 1)); done
    echo "listen stats"
    echo "  bind 127.0.0.1:$ST_PORT"
    echo "  stats enable"
    echo "  stats uri /stats"
  } >"$W/haproxy.cfg"
  "$HAPROXY" -f "$W/haproxy.cfg" -q >"$W/haproxy.log" 2>&1 &
  HA_PID=$!
  PIDS+=($HA_PID)
  wait_up "http://127.0.0.1:$HA_PORT/readiness"
}

scrape() { # FILE: every engine's counters, then haproxy's per-server CSV
  local s
  for s in "${SIMS[@]}"; do
    echo "== $s"
    curl -s -m 2 "$s/metrics" | grep -E '^vllm:(prefix_cache_(queries|hits)_total|request_success_total)' || true
  done >"$1"
  curl -s -m 2 "http://127.0.0.1:$ST_PORT/stats;csv" >"$1.ha" || true
}

run_one() { # WORKLOAD KV MODE(one|one3|three|apart|kill|killnr)
  local wl=$1 kv=$2 mode=$3 n=${REPLICAS:-3} threads=1 tag="$1-$2-$3"
  case $mode in one) n=1 ;; one3) n=1 threads=3 ;; esac
  echo "fleet_live: $tag ($(uptime | sed 's/.*load average: //'))" >&2
  start_sims
  start_gateways "$n" "$kv" "$([ "$mode" = killnr ] && echo 0 || echo 3)" "$threads" \
    "$([ "$mode" = apart ] && echo 0 || echo 1)"
  echo "$n" >"$W/$tag.n"
  local t_warm t_kill
  t_warm=$(python3 -c "print(${WARM_S[$wl]} / $SPEED)")
  t_kill=$(python3 -c "print((${WARM_S[$wl]} + ${STAGE_S[$wl]}) / $SPEED)")
  # shellcheck disable=SC2086
  "$BIN" bench --mode live --target "http://127.0.0.1:$HA_PORT" --policies "$tag" \
    ${FLAGS[$wl]} --stages "${STAGE[$wl]}" --warmup-stages 1 --speed "$SPEED" --retries 2 \
    --seed "$SEED" --max-inflight 1024 --quiet --json "$W/$tag.json" >/dev/null 2>"$W/$tag.bench.log" &
  local bench=$! t0
  PIDS+=($bench)
  t0=$(date +%s.%N)
  sleep "$t_warm"
  scrape "$W/$tag.m0"
  if [ "$mode" = kill ] || [ "$mode" = killnr ]; then
    sleep "$(python3 -c "print(max(0, $t0 + $t_kill - $(date +%s.%N)))")"
    kill -9 "${GW_PIDS[2]}"
    scrape "$W/$tag.mk"
  fi
  wait "$bench" || { echo "fleet_live: $tag: the bench failed:" >&2; tail -5 "$W/$tag.bench.log" >&2; }
  scrape "$W/$tag.m1"
  echo "$(cat /proc/loadavg | cut -d' ' -f1)" >"$W/$tag.load"
  # The gateways' CPU seconds over the run (utime + stime; a killed one's
  # are gone): what the replicas and their exchange cost.
  local p cpu=0
  for p in "${GW_PIDS[@]}"; do
    [ -r "/proc/$p/stat" ] || continue
    cpu=$((cpu + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  python3 -c "import os; print($cpu / os.sysconf('SC_CLK_TCK'))" >"$W/$tag.cpu"
  stop "$HA_PID" "${GW_PIDS[@]}" "${SIM_PIDS[@]}"
  PIDS=()
}

for wl in ${WORKLOADS:-llmd chat}; do
  for kv in ${KV:-events none}; do
    for mode in ${MODES:-one one3 three kill killnr}; do run_one "$wl" "$kv" "$mode"; done
  done
done
python3 bench/routing/fleet_live_table.py --collect "$W" "$OUT" "$SPEED"
python3 bench/routing/fleet_live_table.py "$OUT"
