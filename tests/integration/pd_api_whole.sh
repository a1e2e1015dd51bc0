# A vLLM PD pool and the endpoints whose requests the engines cannot split
# (vLLM's Responses and Messages requests carry no kv_transfer_params):
# served whole by a decode worker, never a silent 404 or a prefill leg that
# the engine would ignore; the reason is in the log, /debug/route, the
# access log (served_as) and kvgate_pd_aggregated_total. Chat still splits.
. "$KVG_ROOT/tests/integration/lib.sh"

GW=$(free_port) P=$(free_port) PS=$(free_port) D=$(free_port)
start_sim "$P" --role prefill --side-channel-port "$PS" || exit 1
start_sim "$D" --role decode || exit 1
start_serve "$GW" --vllm-pd-disaggregation --prefill "http://127.0.0.1:$P" none \
  --decode "http://127.0.0.1:$D" --pd-threshold-tokens 16 --disable-health-check || exit 1
G="http://127.0.0.1:$GW"
LOG=$TMP/serve-$GW.log
metric() { curl -s -m 2 "$G/metrics" | prom_value "$1"; }
code() { curl -s -m 20 -o "$TMP/out" -w '%{http_code}' "$@"; }
LONG=$(printf 'the quick brown fox jumps over the lazy dog %.0s' $(seq 1 8))

check "Responses under PD: 200" \
  [ "$(code "$G/v1/responses" -d "{\"model\":\"sim-model\",\"input\":\"$LONG\",\"max_output_tokens\":4}")" = 200 ]
check "  ... served by the decode worker" grep -q "\"path\":\"/v1/responses\".*\"served_as\":\"aggregated_on_decode\",\"worker\":\"http://127.0.0.1:$D\"" "$LOG"
check "Messages under PD (stream): 200" \
  [ "$(code -N "$G/v1/messages" -d "{\"model\":\"sim-model\",\"max_tokens\":4,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"$LONG\"}]}")" = 200 ]
check "  ... its stream ends" grep -q 'message_stop' "$TMP/out"
check "both counted" [ "$(metric kvgate_pd_aggregated_total)" = 2 ]
check "the reason logged once per endpoint" \
  [ "$(grep -c 'PD: /v1/responses requests are served whole by a decode worker' "$LOG")" = 1 ]
check "/debug/route says why" \
  [ "$(code "$G/debug/route" -H 'x-kvgate-endpoint: /v1/messages' -d '{"model":"sim-model","max_tokens":4,"messages":[{"role":"user","content":"x"}]}'; json_get "$TMP/out" "j['pd']['decision'] + ':' + str('kv_transfer_params' in j['pd']['reason']) + ':' + j['chosen']")" = "200aggregated_on_decode:True:http://127.0.0.1:$D" ]
# A prompt the decode has not cached (the ones above it has: decode_only).
FRESH=$(printf 'a different sentence for a fresh prompt %.0s' $(seq 1 8))
check "chat still splits (a prefill leg)" \
  [ "$(code "$G/v1/chat/completions" -H 'x-request-id: pd-chat-1' -d "{\"model\":\"sim-model\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"$FRESH\"}]}")" = 200 ]
check "  ... counted as prefill_decode" [ "$(metric 'kvgate_pd_decisions_total{decision="prefill_decode"}')" = 1 ]
check "  ... the access log names both legs' workers" \
  grep -q "\"request_id\":\"pd-chat-1\".*\"worker\":\"http://127.0.0.1:$D\",\"prefill_worker\":\"http://127.0.0.1:$P\"" "$LOG"
check "leg outcomes: one prefill ok, three decodes ok (two whole, one after its prefill)" \
  [ "$(metric 'kvgate_pd_leg_outcomes_total{leg="prefill",outcome="ok"}') $(metric 'kvgate_pd_leg_outcomes_total{leg="decode",outcome="ok"}') $(metric 'kvgate_pd_leg_outcomes_total{leg="decode",outcome="error"}')" = "1 3 0" ]
finish
