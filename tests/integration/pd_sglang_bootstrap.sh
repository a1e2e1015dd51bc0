#!/usr/bin/env bash
# SGLang's bootstrap protocol end to end on loopback: kvgate serve
# --pd-disaggregation --prefill URL BOOTSTRAP_PORT --decode URL over sims in
# roles. Both legs get the same body with bootstrap_host/port/room at once;
# the decode waits (bounded) for the room's KV on the prefill's bootstrap
# port. Either leg failing ends the other: a failed prefill ends the waiting
# decode (no 2-minute bootstrap wait), a bootstrap that never arrives ends
# at the decode's bound, a failed decode ends the prefill. Every case leaves
# in-flight at 0 on every worker.
. "$KVG_ROOT/tests/integration/lib.sh"

GW=$(free_port) P=$(free_port) PB=$(free_port) D=$(free_port)
PROMPT=$(printf 'the quick brown fox jumps over the lazy dog %.0s' $(seq 1 12))
start_prefill() {
  start_sim "$P" --flavor sglang --role prefill --bootstrap-port "$PB" "$@"
  P_PID=${PIDS[-1]}
}
start_decode() {
  start_sim "$D" --flavor sglang --role decode --bootstrap-timeout-secs 1 "$@"
  D_PID=${PIDS[-1]}
}
restart() { # prefill|decode ARGS...
  local which=$1; shift
  if [ "$which" = prefill ]; then kill -TERM "$P_PID"; wait "$P_PID" 2>/dev/null; start_prefill "$@"
  else kill -TERM "$D_PID"; wait "$D_PID" 2>/dev/null; start_decode "$@"; fi
}
start_prefill
start_decode
start_serve "$GW" --pd-disaggregation --prefill "http://127.0.0.1:$P" "$PB" \
  --decode "http://127.0.0.1:$D" --disable-health-check
G="http://127.0.0.1:$GW"
metric() { curl -s -m 2 "$G/metrics" | prom_value "$1"; }
body() { # stream max_tokens
  printf '{"model":"sim-model","prompt":"%s","max_tokens":%s,"ignore_eos":true,"stream":%s,"stream_options":{"include_usage":true}}' \
    "$PROMPT" "$2" "$1"
}

# --- happy path
curl -s -N -m 20 -D "$TMP/h1" "$G/v1/completions" -d "$(body true 6)" >"$TMP/s1"
check "stream ends with [DONE]" grep -q '^data: \[DONE\]' "$TMP/s1"
check "served by the decode" grep -qi "x-kvgate-worker: http://127.0.0.1:$D" "$TMP/h1"
check "decode's usage shows the bootstrapped KV as cached" kv_was_pulled "$TMP/s1"
check "both legs counted" test "$(metric "kvgate_pd_requests_total{worker=\"http://127.0.0.1:$P\",leg=\"prefill\"}")/$(metric "kvgate_pd_requests_total{worker=\"http://127.0.0.1:$D\",leg=\"decode\"}")" = 1/1
curl -s -m 20 "$G/v1/completions" -d "$(body false 3)" >"$TMP/j1"
check "non-stream answer" test "$(json_get "$TMP/j1" "j['usage']['completion_tokens']")" = 3
check "in flight 0 after the happy path" workers_idle "$G"

# --- the prefill fails: the decode is ended at once, not left waiting
restart prefill --fail-rate 1
restart decode --bootstrap-timeout-secs 60
code=$(curl -s -o "$TMP/j2" -w '%{http_code}' -m 20 "$G/v1/completions" -d "$(body false 3)")
check "failed prefill: 502 to the client" test "$code" = 502
check "failed prefill: a JSON error" test "$(json_get "$TMP/j2" "'error' in j")" = True
curl -s -N -m 20 "$G/v1/completions" -d "$(body true 3)" >"$TMP/s2"
check "failed prefill, stream: an error" grep -q '"error"' "$TMP/s2"
check "failed prefill counted" test "$(metric kvgate_pd_prefill_failures_total)" = 2
check "in flight 0 after failed prefills" workers_idle "$G"
idle_engine() { # PORT: the engine runs and waits for nothing (bounded)
  local i
  for i in $(seq 1 "$(scaled 50)"); do
    curl -s -m 1 "http://127.0.0.1:$1/metrics" | grep -q '^sglang:num_running_reqs{.*} 0' && return 0
    sleep 0.1
  done
  return 1
}
check "the decode engine dropped the requests" idle_engine "$D"

# --- a bootstrap that never arrives: the decode's bound ends it
restart prefill --hang-rate 1
restart decode --bootstrap-timeout-secs 1
code=$(curl -s -o "$TMP/j3" -w '%{http_code}' -m 20 "$G/v1/completions" -d "$(body false 3)")
check "no bootstrap: the decode's 500 reaches the client" test "$code" = 500
check "no bootstrap: named" grep -q 'no KV within' "$TMP/j3"
check "in flight 0 after a missing bootstrap (the hung prefill cancelled)" workers_idle "$G"

# --- the decode fails: the prefill is ended
restart prefill --speed 0.01
restart decode --fail-rate 1
code=$(curl -s -o "$TMP/j4" -w '%{http_code}' -m 20 "$G/v1/completions" -d "$(body false 3)")
check "failed decode: its error to the client" test "$code" = 500
check "in flight 0 after a failed decode" workers_idle "$G"
check "the prefill engine dropped it" idle_engine "$P"
finish
