# Shared helpers for integration tests (sourced, not run). Every process a
# test starts is recorded and stopped by its PID on exit; every wait is
# bounded; results are counted and the closing "# N passed, N failed, N
# skipped" line is printed by finish. A check whose precondition the machine
# lacks (a tool not installed) is reported with skip: counted, never a pass.
set -u
: "${KVG_BIN:?set by tests/run.sh}"

# Waits (never assertions) scale with the build: an ASan or fuzz binary starts
# and answers several times slower. KVG_WAIT_SCALE if set, else 4 when
# KVG_BUILD (exported by tests/run.sh) names an asan or fuzz build, else 1.
if [ -n "${KVG_WAIT_SCALE:-}" ]; then
  WAIT_SCALE=$KVG_WAIT_SCALE
else
  case "${KVG_BUILD:-}" in *asan* | *fuzz*) WAIT_SCALE=4 ;; *) WAIT_SCALE=1 ;; esac
fi
if ! awk -v k="$WAIT_SCALE" 'BEGIN { exit !(k ~ /^[0-9]*\.?[0-9]+$/ && k > 0) }'; then
  echo "KVG_WAIT_SCALE must be a positive number, not '$WAIT_SCALE'" >&2
  exit 1
fi
# scaled N: N times the wait scale, for a wait's bound: the seconds of a
# sleep or timeout, or the count of a polling loop (seq takes either).
scaled() {
  awk -v n="$1" -v k="$WAIT_SCALE" 'BEGIN { v = n * k; if (v == int(v)) printf "%d\n", v; else printf "%g\n", v }'
}

PASSED=0
FAILED=0
SKIPPED=0
PIDS=()
TMP=$(mktemp -d /tmp/kvgate-it.XXXXXX)

stop_all() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 1 "$(scaled 50)"); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null
  done
  PIDS=()
}
cleanup() {
  stop_all
  rm -rf "$TMP"
}
trap cleanup EXIT

ok() { PASSED=$((PASSED + 1)); echo "ok $1"; }
bad() { FAILED=$((FAILED + 1)); echo "FAIL $1${2:+: $2}"; }
skip() { SKIPPED=$((SKIPPED + 1)); echo "skip $1: ${2:-no reason given}"; }
check() { # name, command...
  local name=$1; shift
  if "$@"; then ok "$name"; else bad "$name"; fi
}
finish() {
  # Every process stops now, so that sanitizer reports (written at exit) are
  # in the logs; any report is a failure.
  stop_all
  local f
  for f in "$TMP"/*.log "$TMP"/*.out; do
    [ -f "$f" ] || continue
    if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$f"; then
      bad "sanitizer report in $(basename "$f")"
      grep -E -A30 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$f" | head -60
    fi
  done
  # A failure on a CI machine leaves only this output: the logs' tails say why.
  if [ "$FAILED" != 0 ]; then
    for f in "$TMP"/*.log; do
      [ -f "$f" ] || continue
      echo "# --- last lines of $(basename "$f")"
      tail -n 25 "$f" | sed 's/^/#   /'
    done
  fi
  echo "# $PASSED passed, $FAILED failed, $SKIPPED skipped"
  [ "$FAILED" = 0 ]
  exit $?
}

# free_port: a loopback port no listener holds, never one this test was
# given before (tests/fixtures/free_port.py keeps the book in $TMP).
# `free_port --run K`: the first of K consecutive free ports.
export KVG_PORTS_FILE=$TMP/ports-handed-out
free_port() {
  /usr/bin/python3 "$KVG_ROOT/tests/fixtures/free_port.py" "$@"
}

# wait_http URL [SECONDS] [STATUS]: until URL answers STATUS (default 200),
# for SECONDS (default 10) times the wait scale.
wait_http() {
  local url=$1 secs=${2:-10} want=${3:-200} i
  for i in $(seq 1 "$(scaled "$((secs * 10))")"); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' -m 1 "$url")" = "$want" ] && return 0
    sleep 0.1
  done
  echo "timed out waiting for $url" >&2
  return 1
}

# wait_grep PATTERN FILE [N]: until grep finds PATTERN in FILE on N lines
# (default 1), for 30 s times the wait scale.
wait_grep() {
  local i
  for i in $(seq 1 "$(scaled 300)"); do
    [ "$(grep -c -- "$1" "$2")" -ge "${3:-1}" ] && return 0
    sleep 0.1
  done
  return 1
}

# start_sim PORT [ARGS...]: a simulated engine on 127.0.0.1:PORT.
start_sim() {
  local port=$1; shift
  "$KVG_BIN" sim --port "$port" "$@" >"$TMP/sim-$port.log" 2>&1 &
  PIDS+=($!)
  wait_http "http://127.0.0.1:$port/v1/models" 10 && return 0
  # Why, in the test's own output (a sim that exited says so in its log).
  kill -0 "${PIDS[-1]}" 2>/dev/null || echo "# the sim on $port has exited" >&2
  tail -5 "$TMP/sim-$port.log" | sed 's/^/#   /' >&2
  return 1
}

# start_serve PORT ARGS...: the gateway; its log in $TMP/serve-PORT.log.
start_serve() {
  local port=$1; shift
  "$KVG_BIN" serve --port "$port" "$@" >"$TMP/serve-$port.out" 2>"$TMP/serve-$port.log" &
  SERVE_PID=$!
  PIDS+=($SERVE_PID)
  wait_http "http://127.0.0.1:$port/health" 10
}

# start_redis PORT: a private redis-server (no persistence); REDIS_PID set.
start_redis() {
  /usr/bin/redis-server --port "$1" --bind 127.0.0.1 --save "" --appendonly no \
    --daemonize no >"$TMP/redis-$1.out" 2>&1 &
  REDIS_PID=$!
  PIDS+=($REDIS_PID)
  local i
  for i in $(seq 1 "$(scaled 100)"); do
    redis-cli -p "$1" ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.05
  done
  return 1
}

# keys_yaml FILE NAME:KEY[:admin]...: a --keys file holding those keys
# (their hashes), with admin: true for those marked so.
keys_yaml() {
  local f=$1 spec name key role
  shift
  echo "keys:" >"$f"
  for spec in "$@"; do
    IFS=: read -r name key role <<<"$spec"
    printf '  - name: %s\n    hash: %s\n' "$name" "$("$KVG_BIN" keys hash "$key")" >>"$f"
    if [ "$role" = admin ]; then echo "    admin: true" >>"$f"; fi
  done
}

# workers_idle GATEWAY_URL: until every worker's in_flight in GET /workers is
# 0 (bounded); prints the last answer when it never gets there.
workers_idle() {
  local i
  for i in $(seq 1 "$(scaled 50)"); do
    curl -s -m 1 "$1/workers" >"$TMP/workers.json" &&
      [ "$(json_get "$TMP/workers.json" "sum(w['in_flight'] for w in j['workers'])")" = 0 ] &&
      return 0
    sleep 0.1
  done
  cat "$TMP/workers.json" >&2
  return 1
}

# kv_was_pulled SSE_FILE: the stream's usage chunk counts every prompt token
# but the last as cached (a PD decode's KV came from its prefill).
kv_was_pulled() {
  grep '"usage"' "$1" | sed 's/^data: //' >"$1.usage"
  [ "$(json_get "$1.usage" "j['usage']['prompt_tokens_details']['cached_tokens'] >= j['usage']['prompt_tokens'] - 1")" = True ]
}

# prom_value KEY < exposition: the value of the series KEY ('name{labels}');
# a KEY without the model label its series carry (kvgate's PD and routing
# series are per served model) gets their sum over models.
prom_value() {
  awk -v k="$1" '$1 == k { print $2; found = 1; exit }
    { n = $1; if (gsub(/model="[^"]*",?/, "", n)) { sub(/,}$/, "}", n); sub(/\{\}$/, "", n); if (n == k) { s += $2; m = 1 } } }
    END { if (!found && m) print s }'
}

# Processes whose environment holds KVG_BENCH_TEST_MARK=$1 (a test sets it
# on what it starts, and every child inherits it): how a test finds what its
# runs left behind without trusting names or their bookkeeping.
marked_count() {
  local n=0 e
  for e in /proc/[0-9]*/environ; do
    { tr '\0' '\n' <"$e"; } 2>/dev/null | grep -qx "KVG_BENCH_TEST_MARK=$1" && n=$((n + 1))
  done
  echo $n
}

json_get() { # json_get FILE EXPR  (EXPR in python, `j` is the document)
  /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"
}
