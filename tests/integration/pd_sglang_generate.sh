# SGLang's native /generate under --pd-disaggregation: its bootstrap fields
# ride on /generate as on the OpenAI routes (GenerateReqInput), so kvgate
# splits it like chat: the prefill and the decode both get the body with
# bootstrap_host/port/room, the decode pulls the prefill's KV (its
# meta_info counts it as cached), stream and not.
. "$KVG_ROOT/tests/integration/lib.sh"

GW=$(free_port) P=$(free_port) PB=$(free_port) D=$(free_port)
PROMPT=$(printf 'the quick brown fox jumps over the lazy dog %.0s' $(seq 1 12))
start_sim "$P" --flavor sglang --role prefill --bootstrap-port "$PB" || exit 1
start_sim "$D" --flavor sglang --role decode --bootstrap-timeout-secs 5 || exit 1
start_serve "$GW" --pd-disaggregation --prefill "http://127.0.0.1:$P" "$PB" \
  --decode "http://127.0.0.1:$D" --disable-health-check || exit 1
G="http://127.0.0.1:$GW"
metric() { curl -s -m 2 "$G/metrics" | prom_value "$1"; }
body() { # stream max_new_tokens
  printf '{"text":"%s","sampling_params":{"max_new_tokens":%s,"ignore_eos":true},"stream":%s}' \
    "$PROMPT" "$2" "$1"
}
code=$(curl -s -m 20 -o "$TMP/j1" -w '%{http_code}' -D "$TMP/h1" "$G/generate" -d "$(body false 5)")
check "generate under PD: 200" [ "$code" = 200 ]
check "  ... served by the decode" grep -qi "x-kvgate-worker: http://127.0.0.1:$D" "$TMP/h1"
check "  ... 5 tokens" [ "$(json_get "$TMP/j1" "j['meta_info']['completion_tokens']")" = 5 ]
check "  ... the decode pulled the prompt's KV (cached)" \
  [ "$(json_get "$TMP/j1" "j['meta_info']['cached_tokens'] > 0")" = True ]
check "both legs counted" test "$(metric "kvgate_pd_requests_total{worker=\"http://127.0.0.1:$P\",leg=\"prefill\"}")/$(metric "kvgate_pd_requests_total{worker=\"http://127.0.0.1:$D\",leg=\"decode\"}")" = 1/1
curl -s -N -m 20 "$G/generate" -d "$(body true 4)" >"$TMP/s1"
check "stream: ends with [DONE]" grep -q '^data: \[DONE\]' "$TMP/s1"
check "stream: the last chunk counts 4 tokens" \
  [ "$(grep '^data: {' "$TMP/s1" | tail -1 | sed 's/^data: //' | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["meta_info"]["completion_tokens"])')" = 4 ]
check "not counted as served whole" [ "$(metric kvgate_pd_aggregated_total)" = 0 ]
check "in flight 0" workers_idle "$G"
finish
