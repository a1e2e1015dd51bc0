# A request under a token quota that names no output limit (Codex sends no
# max_output_tokens) reserves its context's remainder: with a long context
# that is the whole per-minute budget, so while it runs every other request
# of the key is refused (429). With
# --quota-output-cap N it is given N as its limit, in the body the engine
# gets (max_output_tokens, max_tokens; the chat request of a translated
# one too), and reserves N: answered, never past N tokens, charged its usage.
. "$(dirname "$0")/lib.sh"
S1=$(free_port); S2=$(free_port); GW=$(free_port); GW2=$(free_port)
start_sim "$S1" --model m --profile qwen3-32b-h100-tp2 || exit 1
start_sim "$S2" --model m --profile instant --disable-endpoints responses || exit 1
KU=sk-u-$RANDOM$RANDOM
cat >"$TMP/keys.yaml" <<YAML
keys:
  - name: agent
    hash: $("$KVG_BIN" keys hash "$KU")
    limits: {tokens_per_minute: 20000}
YAML
start_serve "$GW" --worker-urls "http://127.0.0.1:$S1" --keys "$TMP/keys.yaml" || exit 1
start_serve "$GW2" --worker-urls "http://127.0.0.1:$S1" --keys "$TMP/keys.yaml" --quota-output-cap 40 || exit 1
code() { curl -s -m 20 -o "$TMP/out" -w '%{http_code}' -H "authorization: Bearer $KU" "$@"; }
R='{"model":"m","input":"write a long story","stream":false}'
# One request in flight (real-time decode until its EOS: seconds), then a second one.
busy() { # GATEWAY_PORT: a streamed request without a limit, in the background
  curl -s -m 30 -N -H "authorization: Bearer $KU" "http://127.0.0.1:$1/v1/responses" \
    -d '{"model":"m","input":"a long one","stream":true,"max_output_tokens":null}' >/dev/null &
  PIDS+=($!)
  local i
  for i in $(seq 1 "$(scaled 50)"); do # until the engine runs it (bounded)
    curl -s -m 1 "http://127.0.0.1:$S1/metrics" | grep -q '^vllm:num_requests_running{.*} [1-9]' && return 0
    sleep 0.1
  done
}
busy "$GW"
check "no output limit, no cap: one in flight holds the whole budget, the next is 429" \
  [ "$(code "http://127.0.0.1:$GW/v1/responses" -d "$R")" = 429 ]
busy "$GW2"
check "with --quota-output-cap 40: the next one is 200" \
  [ "$(code "http://127.0.0.1:$GW2/v1/responses" -d "$R")" = 200 ]
check "  ... the engine was told 40 (max_output_tokens)" \
  [ "$(json_get "$TMP/out" "str(j['max_output_tokens']) + ':' + str(j['usage']['output_tokens'] <= 40)")" = "40:True" ]
check "chat without max_tokens: capped too" \
  [ "$(code "http://127.0.0.1:$GW2/v1/chat/completions" -d '{"model":"m","messages":[{"role":"user","content":"go"}],"ignore_eos":true}'; json_get "$TMP/out" "j['usage']['completion_tokens']")" = "20040" ]
check "a request with its own limit keeps it" \
  [ "$(code "http://127.0.0.1:$GW2/v1/chat/completions" -d '{"model":"m","max_tokens":7,"ignore_eos":true,"messages":[{"role":"user","content":"go"}]}'; json_get "$TMP/out" "j['usage']['completion_tokens']")" = "2007" ]
# Translated (an engine without /v1/responses): the chat request carries the
# cap. The sim may end a text early (its EOS): of six answers none is past 30
# and at least one stopped at it (uncapped, all six under 31: p < 1e-4).
GW3=$(free_port)
start_serve "$GW3" --worker-urls "http://127.0.0.1:$S2" --keys "$TMP/keys.yaml" \
  --quota-output-cap 30 --translate-apis responses || exit 1
: >"$TMP/n.txt"
for i in 1 2 3 4 5 6; do
  code "http://127.0.0.1:$GW3/v1/responses" -d "{\"model\":\"m\",\"input\":\"story $i\"}" >/dev/null
  json_get "$TMP/out" "j['usage']['output_tokens']" >>"$TMP/n.txt"
done
check "translated: capped at 30 in the chat request ($(tr '\n' ' ' <"$TMP/n.txt"))" \
  /usr/bin/python3 -c "n=[int(x) for x in open('$TMP/n.txt')]; assert len(n) == 6 and max(n) == 30, n"
finish
