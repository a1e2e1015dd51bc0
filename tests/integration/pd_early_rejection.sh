#!/usr/bin/env bash
# Early rejection (Mooncake §7.4) in front of a vLLM PD pair: with one decode
# busy holding most of its KV, a request whose prefill would land on it finds
# no room when predicted and is rejected at the door (503 + Retry-After)
# instead of wasting a prefill; the decode's running stream is unharmed and
# in-flight returns to 0 on every worker. By priority: sheddable requests
# (priority < 0) get 429, standard and critical ones 503, all with
# Retry-After.
. "$KVG_ROOT/tests/integration/lib.sh"

GW=$(free_port) P=$(free_port) PS=$(free_port) D=$(free_port)
PROMPT=$(printf 'the quick brown fox jumps over the lazy dog %.0s' $(seq 1 12)) # ~530 tokens: 34 blocks
start_sim "$P" --role prefill --side-channel-port "$PS"
start_sim "$D" --role decode --kv-capacity-tokens 2048 --speed 0.05 # 128 blocks, slow tokens
start_serve "$GW" --vllm-pd-disaggregation --prefill "http://127.0.0.1:$P" \
  --decode "http://127.0.0.1:$D" --pd-threshold-tokens 16 --pd-early-rejection \
  --pd-reject-kv-frac 0.5 --disable-health-check --metrics-scrape-interval-ms 100
G="http://127.0.0.1:$GW"
metric() { curl -s -m 2 "$G/metrics" | prom_value "$1"; }
body() { printf '{"model":"sim-model","prompt":"%s","max_tokens":%s,"ignore_eos":true,"stream":true}' "$PROMPT" "$1"; }
scraped() { # the decode's KV capacity is known (bounded)
  local i
  for i in $(seq 1 "$(scaled 50)"); do
    curl -s -m 1 "$G/workers" | grep -q '"block_size":16' && return 0
    sleep 0.1
  done
  return 1
}
check "engine capacities scraped" scraped

curl -s -N -m 60 "$G/v1/completions" -d "$(body 300)" >"$TMP/s1" &
CURL=$!
for _ in $(seq 1 "$(scaled 100)"); do grep -q '"text"' "$TMP/s1" 2>/dev/null && break; sleep 0.1; done
check "the first request streams from the decode" grep -q '"text"' "$TMP/s1"
code=$(curl -s -D "$TMP/h2" -o "$TMP/b2" -w '%{http_code}' -m 10 "$G/v1/completions" -d "$(body 300)")
check "second request rejected at the door" test "$code" = 503
check "with Retry-After" grep -qi '^retry-after:' "$TMP/h2"
check "naming decode capacity" grep -q decode_capacity "$TMP/b2"
# By priority: a sheddable request is shed with 429, a critical one 503.
code=$(curl -s -D "$TMP/h3" -o "$TMP/b3" -w '%{http_code}' -m 10 "$G/v1/completions" \
  -H 'x-kvgate-priority: sheddable' -d "$(body 300)")
check "a sheddable request is rejected with 429" test "$code" = 429
check "with Retry-After" grep -qi '^retry-after:' "$TMP/h3"
check "naming decode capacity" grep -q decode_capacity "$TMP/b3"
code=$(curl -s -D "$TMP/h4" -o "$TMP/b4" -w '%{http_code}' -m 10 "$G/v1/completions" \
  -H 'x-kvgate-priority: -5' -d "$(body 300)")
check "any negative priority is sheddable: 429" test "$code" = 429
code=$(curl -s -D "$TMP/h5" -o "$TMP/b5" -w '%{http_code}' -m 10 "$G/v1/completions" \
  -H 'x-kvgate-priority: critical' -d "$(body 300)")
check "a critical request is rejected with 503" test "$code" = 503
check "with Retry-After" grep -qi '^retry-after:' "$TMP/h5"
check "early rejections counted" test "$(metric kvgate_pd_early_rejections_total)" = 4
check "no prefill was sent for it" \
  test "$(metric "kvgate_pd_requests_total{worker=\"http://127.0.0.1:$P\",leg=\"prefill\"}")" = 1
check "no prefill wasted" test "$(metric kvgate_pd_wasted_prefills_total)" = 0
kill "$CURL" 2>/dev/null
wait "$CURL" 2>/dev/null
check "in flight 0 on every worker" workers_idle "$G"
finish
