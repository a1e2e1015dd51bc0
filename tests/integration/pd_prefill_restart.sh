#!/usr/bin/env bash
# Router-side detection of a restarted prefill (vLLM NIXL pairs): kvgate
# learns each prefill's engine id from its answers (kv_transfer_params'
# remote_engine_id). Request A prefills on P, its decode fails before its
# first byte (the preferred decode is down) and waits for its retry; P
# restarts on the same port meanwhile and request B's prefill shows the new
# engine id. A's retry must not send a decode to pull from the dead engine
# (that would fail with vLLM's 500): its prefill runs again on the new
# engine and the other decode serves it with the pulled KV. Restart and
# re-run are counted, /workers shows the new engine id, in-flight 0 after.
. "$KVG_ROOT/tests/integration/lib.sh"

GW=$(free_port) P=$(free_port) PS=$(free_port) D1=$(free_port) D2=$(free_port)
PROMPT=$(printf 'the quick brown fox jumps over the lazy dog %.0s' $(seq 1 12)) # ~530 tokens
start_prefill() {
  start_sim "$P" --role prefill --side-channel-port "$PS" --labels rack=r1,zone=z1
  P_PID=${PIDS[-1]}
}
start_prefill
start_sim "$D2" --role decode --labels rack=r2,zone=z1
# D1 (nothing listens there) is in the prefill's rack: the first decode pick.
# No health checks, so it stays a candidate; retries wait 8 s without jitter,
# the time the prefill restart below needs (it takes well under a second).
start_serve "$GW" --vllm-pd-disaggregation --prefill "http://127.0.0.1:$P" none \
  --decode "http://127.0.0.1:$D1" --decode "http://127.0.0.1:$D2" \
  --worker-labels rack=r1,zone=z1 rack=r1,zone=z1 rack=r2,zone=z1 \
  --pd-threshold-tokens 64 --disable-health-check --retry-initial-backoff-ms 8000 \
  --retry-jitter-factor 0
G="http://127.0.0.1:$GW"
metric() { curl -s -m 2 "$G/metrics" | prom_value "$1"; }
PREFILLS="kvgate_pd_requests_total{worker=\"http://127.0.0.1:$P\",leg=\"prefill\"}"
engine_id() {
  curl -s -m 2 "$G/workers" >"$TMP/w.json" &&
    json_get "$TMP/w.json" "next((w.get('engine_id','') for w in j['workers'] if w['url']=='http://127.0.0.1:$P'), '')"
}
body='{"model":"sim-model","prompt":"'$PROMPT'","max_tokens":4,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}'

curl -s -N -m 40 -D "$TMP/hA" "$G/v1/completions" -d "$body" >"$TMP/sA" &
CURL_A=$!
waiting_retry() { # A prefilled and its decode failed: a retry is pending
  local i
  for i in $(seq 1 "$(scaled 50)"); do
    [ "$(metric "$PREFILLS")" = 1 ] && [ "$(metric kvgate_retries_total)" = 1 ] && return 0
    sleep 0.1
  done
  return 1
}
check "A prefilled, its first decode failed, a retry pending" waiting_retry
E1=$(engine_id)
check "the prefill's engine id is learnt" test -n "$E1"
kill -TERM "$P_PID"; wait "$P_PID" 2>/dev/null
start_prefill
curl -s -N -m 40 "$G/v1/completions" -d "$body" >"$TMP/sB"
E2=$(engine_id)
check "B served after the restart" grep -q '^data: \[DONE\]' "$TMP/sB"
check "the new engine id is learnt" test -n "$E2" -a "$E2" != "$E1"
check "the restart is counted" test "$(metric kvgate_pd_prefill_restarts_total)" = 1
check "and logged" grep -q "pd: prefill http://127.0.0.1:$P restarted" "$TMP/serve-$GW.log"
wait "$CURL_A"
check "A ends with [DONE]" grep -q '^data: \[DONE\]' "$TMP/sA"
check "A has no error event (no pull from the dead engine)" bash -c "! grep -q '\"error\"' '$TMP/sA'"
check "A served by the other decode" grep -qi "x-kvgate-worker: http://127.0.0.1:$D2" "$TMP/hA"
check "with the KV of its second prefill pulled" kv_was_pulled "$TMP/sA"
check "A's prefill ran again: counted" test "$(metric kvgate_pd_prefill_reruns_total)" = 1
check "three prefill legs (A, B, A again)" test "$(metric "$PREFILLS")" = 3
check "no prefill failed" test "$(metric kvgate_pd_prefill_failures_total)" = 0
check "in flight 0 on every worker" workers_idle "$G"
finish
