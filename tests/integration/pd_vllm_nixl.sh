#!/usr/bin/env bash
# vLLM NIXL prefill/decode pairs end to end on loopback: kvgate serve
# --vllm-pd-disaggregation over sims in roles (one prefill, two decodes).
# The happy path (the stream comes from a decode with the prefill's KV:
# cached_tokens shows the pulled blocks), decode_only for short prompts, and
# the faults: client gone during the prefill, prefill killed mid-transfer,
# prefill restarted with its held blocks gone, decode killed before its
# first byte (retried on the other decode) and mid-stream. Each ends cleanly
# and leaves in-flight at 0 on every worker. GET /autoscale's SLO misses by
# leg (slo_miss_prefill, slo_miss_decode) are measured on this PD path.
. "$KVG_ROOT/tests/integration/lib.sh"

GW=$(free_port) P=$(free_port) PS=$(free_port) D1=$(free_port) D2=$(free_port)
PROMPT=$(printf 'the quick brown fox jumps over the lazy dog %.0s' $(seq 1 12)) # ~530 tokens

start_prefill() { # ARGS...
  start_sim "$P" --role prefill --side-channel-port "$PS" --labels rack=r1,zone=z1 "$@"
  P_PID=${PIDS[-1]}
}
start_prefill
start_sim "$D1" --role decode --labels rack=r2,zone=z1
D1_PID=${PIDS[-1]}
start_sim "$D2" --role decode --labels rack=r1,zone=z1 # the prefill's rack: preferred
D2_PID=${PIDS[-1]}
# Autoscale pools that only report (external actuator). A TTFT target of
# 1 ms: a streamed pair's prefill leg alone (a ~530-token prefill and its
# round trip) passes it, so its miss is the prefill leg's; the ITL target
# is past reach.
cat >"$TMP/as.yaml" <<YAML
interval_secs: 0.3
actuator: external
pools:
  - {name: pre, model: qwen2.5-7b, role: prefill, planner: kvgate, ttft_secs: 0.001, itl_secs: 60, max_replicas: 4}
  - {name: dec, model: qwen2.5-7b, role: decode, planner: kvgate, ttft_secs: 0.001, itl_secs: 60, max_replicas: 4}
YAML
start_serve "$GW" --autoscale "$TMP/as.yaml" --vllm-pd-disaggregation --prefill "http://127.0.0.1:$P" none \
  --decode "http://127.0.0.1:$D1" --decode "http://127.0.0.1:$D2" \
  --worker-labels rack=r1,zone=z1 rack=r2,zone=z1 rack=r1,zone=z1 \
  --pd-threshold-tokens 64 --disable-health-check --retry-initial-backoff-ms 10
# No health checks: a killed decode stays a candidate, so the retry below
# happens whatever the timing (a health check could otherwise get there first).
G="http://127.0.0.1:$GW"

wait_healthy() { # N: until N workers are healthy
  local i
  for i in $(seq 1 "$(scaled 80)"); do
    curl -s -m 1 "$G/workers" >"$TMP/w.json" 2>/dev/null &&
      [ "$(json_get "$TMP/w.json" "sum(1 for w in j['workers'] if w['healthy'])")" = "$1" ] &&
      return 0
    sleep 0.1
  done
  return 1
}
metric() { curl -s -m 2 "$G/metrics" | prom_value "$1"; }
body() { # stream max_tokens
  printf '{"model":"sim-model","prompt":"%s","max_tokens":%s,"ignore_eos":true,"stream":%s,"stream_options":{"include_usage":true}}' \
    "$PROMPT" "$2" "$1"
}
check "all workers healthy" wait_healthy 3
legs() { curl -s -m 2 "$G/autoscale" >"$TMP/as.json" && json_get "$TMP/as.json" "[tuple(None if v is None else float(v) for v in (p['signals']['slo_miss_prefill'], p['signals']['slo_miss_decode'])) for p in j['pools']]"; }
for _ in $(seq 1 "$(scaled 30)"); do [ -n "$(legs)" ] && break; sleep 0.1; done # the first tick
check "GET /autoscale: misses by leg null before any request finished ($(legs))" test "$(legs)" = "[(None, None), (None, None)]"

# --- happy path: streamed from a decode, its KV pulled from the prefill
curl -s -N -m 20 -D "$TMP/h1" "$G/v1/completions" -d "$(body true 8)" >"$TMP/s1"
check "stream ends with [DONE]" grep -q '^data: \[DONE\]' "$TMP/s1"
check "served by the decode in the prefill's rack" grep -qi "x-kvgate-worker: http://127.0.0.1:$D2" "$TMP/h1"
check "decode's usage shows the pulled KV as cached" kv_was_pulled "$TMP/s1"
check "prefill_decode counted" test "$(metric 'kvgate_pd_decisions_total{decision="prefill_decode"}')" = 1
check "one prefill leg on the prefill" \
  test "$(metric "kvgate_pd_requests_total{worker=\"http://127.0.0.1:$P\",leg=\"prefill\"}")" = 1
check "transfer observed" test "$(metric kvgate_pd_kv_transfer_seconds_count)" = 1
check "  ... under the one model's label (the name its workers list)" \
  test "$(metric 'kvgate_pd_kv_transfer_seconds_count{model="sim-model"}')/$(metric 'kvgate_pd_decisions_total{model="sim-model",decision="prefill_decode"}')" = 1/1
curl -s -m 20 "$G/v1/completions" -d "$(body false 4)" >"$TMP/j1"
check "non-stream answer from decode" test "$(json_get "$TMP/j1" "j['usage']['completion_tokens']")" = 4
# Two pairs finished: the stream's TTFT miss is its prefill leg's, the whole
# answer has no TTFT (no miss), so each pool reads 1 of 2 on the prefill leg
# and none on the decode leg (bounded: until a tick folded both).
for _ in $(seq 1 "$(scaled 30)"); do [ "$(legs)" = "[(0.5, 0.0), (0.5, 0.0)]" ] && break; sleep 0.1; done
check "GET /autoscale: misses by leg measured on the PD path ($(legs))" test "$(legs)" = "[(0.5, 0.0), (0.5, 0.0)]"
check "in flight 0 after the happy path" workers_idle "$G"
curl -s -m 5 "$G/debug/route" -d "$(body false 4)" >"$TMP/dr"
check "/debug/route: the pair's decision" test "$(json_get "$TMP/dr" "j['pd']['decision']")" = prefill_decode
check "/debug/route: the prefill" test "$(json_get "$TMP/dr" "j['pd']['prefill']")" = "http://127.0.0.1:$P"
check "/debug/route: the decode in its rack" test "$(json_get "$TMP/dr" "(j['pd']['decode'], j['pd']['decode_locality'])")" = "('http://127.0.0.1:$D2', 1)"
curl -s -m 5 "$G/debug/route" -d '{"model":"nope","prompt":"hi"}' >"$TMP/dr2"
check "/debug/route: a model nobody serves, named with those served" test "$(json_get "$TMP/dr2" "j['chosen'], j['note']")" = "None no worker serves the model \`nope\` (served: sim-model)"

# --- a short prompt goes to a decode alone
curl -s -m 10 "$G/v1/completions" -d '{"model":"sim-model","prompt":"hi","max_tokens":2}' >"$TMP/j2"
check "short prompt answered" test "$(json_get "$TMP/j2" "j['usage']['completion_tokens']")" = 2
check "decode_only counted" test "$(metric 'kvgate_pd_decisions_total{decision="decode_only"}')" = 1
# A client's own kv_transfer_params would send the decode to pull from a host
# of the client's choosing (here a closed port): kvgate arranges transfers,
# so they never reach the engine.
CLOSED=$(free_port)
curl -s -m 10 "$G/v1/completions" -d '{"model":"sim-model","prompt":"hi","max_tokens":2,"kv_transfer_params":{"do_remote_prefill":true,"do_remote_decode":false,"remote_engine_id":"evil","remote_block_ids":[1],"remote_host":"127.0.0.1","remote_port":'"$CLOSED"',"remote_request_id":"x","tp_size":1},"ec_transfer_params":{"mm_hashes":["h"]}}' >"$TMP/j3"
check "a client's kv_transfer_params do not steer the decode" test "$(json_get "$TMP/j3" "j['usage']['completion_tokens']")" = 2
check "... and decode_only counted it" test "$(metric 'kvgate_pd_decisions_total{decision="decode_only"}')" = 2
# The status page's PD counters (GET /ui/state's "pd"): /metrics' numbers.
curl -s -m 2 "$G/ui/state" >"$TMP/ui"
check "/ui/state: PD counters as /metrics has them" test "$(json_get "$TMP/ui" "(j['pd']['mode'], j['pd']['pairs'], j['pd']['decode_only'], j['pd']['transfers'], j['pd']['transfer_p50_s'] > 0, j['pd']['early_rejections'])")" = "('vllm', $(metric 'kvgate_pd_decisions_total{decision="prefill_decode"}'), 2, $(metric kvgate_pd_kv_transfer_seconds_count), True, 0)"

# --- client gone during the prefill: the prefill is aborted, nothing leaks
kill -TERM "$P_PID"; wait "$P_PID" 2>/dev/null
start_prefill --speed 0.005 # a ~530-token prefill now takes seconds
wait_healthy 3
curl -s -m 1 "$G/v1/completions" -d "$(body true 8)" >/dev/null 2>&1
check "in flight 0 after a client left mid-prefill" workers_idle "$G"
ok_running() { # the prefill engine dropped the request (bounded)
  local i
  for i in $(seq 1 "$(scaled 50)"); do
    curl -s -m 1 "http://127.0.0.1:$P/metrics" | grep -q '^vllm:num_requests_running{.*} 0' && return 0
    sleep 0.1
  done
  return 1
}
check "the prefill engine aborted it" ok_running

# --- prefill killed mid-transfer: the decode's pull fails, the client gets an SSE error
kill -TERM "$P_PID"; wait "$P_PID" 2>/dev/null
start_prefill --kv-transfer-extra-secs 30
wait_healthy 3
# The decode legs sent so far, to either decode: a count on D2 alone (it was
# "= 2") depended on where the earlier steps' requests went, which load
# samples decide, and a miss waited past the client's 20 s (ASan, CI).
decode_legs() {
  local a b
  a=$(metric "kvgate_pd_requests_total{worker=\"http://127.0.0.1:$D1\",leg=\"decode\"}")
  b=$(metric "kvgate_pd_requests_total{worker=\"http://127.0.0.1:$D2\",leg=\"decode\"}")
  echo $((${a:-0} + ${b:-0}))
}
legs0=$(decode_legs)
curl -s -N -m 20 "$G/v1/completions" -d "$(body true 8)" >"$TMP/s3" &
CURL=$!
for _ in $(seq 1 "$(scaled 50)"); do # until the prefill answered (the decode leg is pulling)
  [ "$(decode_legs)" -gt "$legs0" ] && break
  sleep 0.1
done
sleep 0.3
kill -KILL "$P_PID"; wait "$P_PID" 2>/dev/null
wait "$CURL"
check "mid-transfer kill: SSE error event" grep -q '"error"' "$TMP/s3"
check "mid-transfer kill: then [DONE]" grep -q '^data: \[DONE\]' "$TMP/s3"
check "in flight 0 after the prefill died mid-transfer" workers_idle "$G"

# --- prefill restarted with its held blocks gone: the decode fails as vLLM does
start_prefill
wait_healthy 3
curl -s -m 10 "http://127.0.0.1:$P/v1/completions" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":1,\"kv_transfer_params\":{\"do_remote_decode\":true}}" >"$TMP/pf"
json_get "$TMP/pf" "json.dumps(j['kv_transfer_params'])" >"$TMP/kvp"
kill -TERM "$P_PID"; wait "$P_PID" 2>/dev/null
start_prefill
code=$(curl -s -o "$TMP/stale" -w '%{http_code}' -m 10 "http://127.0.0.1:$D1/v1/completions" \
  -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":4,\"kv_transfer_params\":$(cat "$TMP/kvp")}")
check "stale KV params: decode answers 500" test "$code" = 500
check "stale KV params: engine id mismatch named" grep -q 'engine id mismatch' "$TMP/stale"
wait_healthy 3
curl -s -m 20 "$G/v1/completions" -d "$(body false 4)" >"$TMP/j4"
check "the restarted prefill serves new requests" test "$(json_get "$TMP/j4" "j['usage']['completion_tokens']")" = 4

# --- decode killed before its first byte: retried once on the other decode
# The decode pick weighs the engines' scraped load; a scrape taken while the
# last request ran can make D1 look lighter for a moment. Wait (bounded) until
# the gateway would send to D2, so the request below is the one that retries.
decode_is_d2() {
  local i
  for i in $(seq 1 "$(scaled 50)"); do
    curl -s -m 2 "$G/debug/route" -d "$(body false 4)" >"$TMP/dr2" &&
      [ "$(json_get "$TMP/dr2" "j['pd']['decode']")" = "http://127.0.0.1:$D2" ] && return 0
    sleep 0.1
  done
  return 1
}
check "the gateway would send the next decode to D2" decode_is_d2
kill -KILL "$D2_PID"; wait "$D2_PID" 2>/dev/null
curl -s -m 20 -D "$TMP/h5" "$G/v1/completions" -d "$(body false 4)" >"$TMP/j5"
check "retried decode answered" test "$(json_get "$TMP/j5" "j['usage']['completion_tokens']")" = 4
check "answered by the surviving decode" grep -qi "x-kvgate-worker: http://127.0.0.1:$D1" "$TMP/h5"
check "decode retry counted" test "$(metric kvgate_pd_decode_retries_total)" = 1
check "in flight 0 after the decode retry" workers_idle "$G"

# --- decode killed mid-stream: SSE error event + [DONE] from kvgate
kill -TERM "$D1_PID"; wait "$D1_PID" 2>/dev/null
start_sim "$D1" --role decode --labels rack=r2,zone=z1 --speed 0.05
D1_PID=${PIDS[-1]}
wait_healthy 3
curl -s -N -m 30 "$G/v1/completions" -d "$(body true 400)" >"$TMP/s6" &
CURL=$!
for _ in $(seq 1 "$(scaled 100)"); do grep -q '"text"' "$TMP/s6" 2>/dev/null && break; sleep 0.1; done
kill -KILL "$D1_PID"; wait "$D1_PID" 2>/dev/null
wait "$CURL"
check "mid-stream kill: tokens first" grep -q '"text"' "$TMP/s6"
check "mid-stream kill: SSE error event" grep -q '"error"' "$TMP/s6"
check "mid-stream kill: then [DONE]" grep -q '^data: \[DONE\]' "$TMP/s6"
check "in flight 0 after the decode died mid-stream" workers_idle "$G"

finish
