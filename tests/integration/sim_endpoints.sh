# kvgate sim's OpenAI Responses and Anthropic Messages endpoints on the wire,
# stream and not, as vLLM answers them: usage counted exactly (checked
# against `kvgate tokenize` of the chat request vLLM renders), the stored
# responses' flow (create, previous_response_id, GET, DELETE, then 404),
# several served names, the tokenizer endpoints, --disable-endpoints, the
# error shapes and hostile bodies. sim_endpoints_pool.sh covers the pooling,
# audio, SGLang and llama.cpp endpoints.
. "$(dirname "$0")/lib.sh"
P1=$(free_port); P2=$(free_port); P3=$(free_port)
start_sim "$P1" --served-model-name m,alias --speed 200 --responses-store --responses-store-max 8 || exit 1
S=http://127.0.0.1:$P1
post() { curl -s -o "$TMP/r" -w '%{http_code}' "$S$1" -H 'content-type: application/json' -d "$2"; }
# ntok CHAT_JSON: the prompt tokens of a chat request, as the engine renders it.
ntok() { echo "$1" | "$KVG_BIN" tokenize --tokenizer builtin:bytes --chat | json_get /dev/stdin 'len(j["ids"])'; }
py() { /usr/bin/python3 - "$@"; } # py ARGS... <<'PY': a check in python (exit status)

# /v1/models: every served name; the first is the one answers report.
curl -s "$S/v1/models" >"$TMP/models"
check "models: both served names" [ "$(json_get "$TMP/models" '[d["id"] for d in j["data"]]')" = "['m', 'alias']" ]

# ---- Responses, not streamed: the Response object, exact usage.
check "responses: 200" [ "$(post /v1/responses '{"model":"alias","input":"hello there","instructions":"be brief","max_output_tokens":6}')" = 200 ]
cp "$TMP/r" "$TMP/resp1"
want=$(ntok '{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there"}]}')
check "responses: input_tokens as rendered" [ "$(json_get "$TMP/resp1" 'j["usage"]["input_tokens"]')" = "$want" ]
check "responses: object, id, model, usage sums" py "$TMP/resp1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); u = j["usage"]
text = j["output"][0]["content"][0]["text"] if j["output"] else ""
assert j["object"] == "response" and j["id"].startswith("resp_") and j["model"] == "m", j
assert j["status"] in ("completed", "incomplete") and j["instructions"] == "be brief"
assert (j["status"] == "incomplete") == (j["incomplete_details"] == {"reason": "max_output_tokens"})
assert j["output"][0]["type"] == "message" and j["output"][0]["role"] == "assistant"
assert 1 <= u["output_tokens"] <= 6 and u["total_tokens"] == u["input_tokens"] + u["output_tokens"]
assert u["output_tokens_details"]["reasoning_tokens"] == 0 and "cached_tokens" in u["input_tokens_details"]
assert len(text) == u["output_tokens"]  # builtin:bytes: one byte a token
assert list(j)[:3] == ["id", "created_at", "incomplete_details"] and j["max_output_tokens"] == 6
PY

# ---- Responses, streamed: vLLM's events in order, sequence numbers 0.., the
# deltas adding up to the completed response's text and usage.
curl -sN "$S/v1/responses" -d '{"model":"m","input":"stream me","max_output_tokens":5,"stream":true}' >"$TMP/rs"
check "responses stream: events, numbers, text, usage" py "$TMP/rs" "$(ntok '{"messages":[{"role":"user","content":"stream me"}]}')" <<'PY'
import json, sys
raw = open(sys.argv[1]).read()
assert raw.endswith("\n\n") and "[DONE]" not in raw
evs = []
for block in raw.strip().split("\n\n"):
    ev, data = block.split("\n")
    assert ev.startswith("event: ") and data.startswith("data: ")
    d = json.loads(data[6:]); assert d["type"] == ev[7:]; evs.append(d)
types = [e["type"] for e in evs]
deltas = [e for e in evs if e["type"] == "response.output_text.delta"]
assert types[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                     "response.content_part.added"], types
assert types[4:4 + len(deltas)] == ["response.output_text.delta"] * len(deltas)
assert types[4 + len(deltas):] == ["response.output_text.done", "response.content_part.done",
                                   "response.output_item.done", "response.completed"], types
assert [e["sequence_number"] for e in evs] == list(range(len(evs)))
# vLLM counts content_index on past the part: 1, 2, ... for the deltas
assert [d["content_index"] for d in deltas] == list(range(1, len(deltas) + 1))
done = evs[-1]["response"]; text = "".join(d["delta"] for d in deltas)
assert done["status"] in ("completed", "incomplete") and done["output"][0]["content"][0]["text"] == text
assert evs[0]["response"]["status"] == "in_progress" and evs[0]["response"]["usage"] is None
assert done["usage"]["output_tokens"] == len(deltas) and done["usage"]["input_tokens"] == int(sys.argv[2])
item = evs[2]["item"]["id"]
assert all(e.get("item_id", item) == item for e in evs[3:-1])
PY

# ---- The store: previous_response_id prepends the stored conversation
# (its messages, then its output as the assistant's), GET returns the very
# object, DELETE drops it, then 404; unknown ids 404; cancel of a finished
# response 400 (vLLM cancels only background ones).
id1=$(json_get "$TMP/resp1" 'j["id"]')
out1=$(json_get "$TMP/resp1" 'j["output"][0]["content"][0]["text"]')
check "previous_response_id: 200" [ "$(post /v1/responses "{\"model\":\"m\",\"input\":\"and then\",\"max_output_tokens\":3,\"previous_response_id\":\"$id1\"}")" = 200 ]
cp "$TMP/r" "$TMP/resp2"
conv=$(/usr/bin/python3 -c 'import json,sys; print(json.dumps({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there"},{"role":"assistant","content":sys.argv[1]},{"role":"user","content":"and then"}]}))' "$out1")
check "previous_response_id: the conversation prepended" [ "$(json_get "$TMP/resp2" 'j["usage"]["input_tokens"]')" = "$(ntok "$conv")" ]
check "previous_response_id: echoed" [ "$(json_get "$TMP/resp2" 'j["previous_response_id"]')" = "$id1" ]
check "previous_response_id: the prefix was cached" [ "$(json_get "$TMP/resp2" 'j["usage"]["input_tokens_details"]["cached_tokens"] >= 16')" = True ]
curl -s "$S/v1/responses/$id1" >"$TMP/got"
check "GET: the stored object" cmp -s "$TMP/got" "$TMP/resp1"
check "cancel a finished response: 400" [ "$(post "/v1/responses/$id1/cancel" '')" = 400 ]
check "cancel: its message" grep -q 'Cannot cancel a synchronous response.' "$TMP/r"
check "DELETE: 200" [ "$(curl -s -o "$TMP/r" -w '%{http_code}' -X DELETE "$S/v1/responses/$id1")" = 200 ]
check "DELETE: deleted" [ "$(json_get "$TMP/r" '(j["id"], j["deleted"])')" = "('$id1', True)" ]
check "GET after DELETE: 404" [ "$(curl -s -o "$TMP/r" -w '%{http_code}' "$S/v1/responses/$id1")" = 404 ]
check "404 in vLLM's shape" [ "$(json_get "$TMP/r" '(j["error"]["type"], j["error"]["param"], j["error"]["code"])')" = "('invalid_request_error', 'response_id', 404)" ]
check "unknown previous_response_id: 404" [ "$(post /v1/responses '{"model":"m","input":"x","previous_response_id":"resp_nope"}')" = 404 ]
check "404 names the id" grep -q "Response with id 'resp_nope' not found." "$TMP/r"
post /v1/responses '{"model":"m","input":"not kept","max_output_tokens":2,"store":false}' >/dev/null
check "store false: not kept" [ "$(curl -s -o /dev/null -w '%{http_code}' "$S/v1/responses/$(json_get "$TMP/r" 'j["id"]')")" = 404 ]
for i in $(seq 1 10); do post /v1/responses "{\"model\":\"m\",\"input\":\"n$i\",\"max_output_tokens\":1}" >/dev/null; done
check "the store keeps at most --responses-store-max" [ "$(curl -s -o /dev/null -w '%{http_code}' "$S/v1/responses/$(json_get "$TMP/resp2" 'j["id"]')")" = 404 ]
check "GET /v1/responses/{id}: POST is 405" [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$S/v1/responses/x")" = 405 ]

# ---- Background responses: answered at once (queued), run with no client,
# kept when done; cancel stops a running one (kept as cancelled).
check "background: 200 queued" [ "$(post /v1/responses '{"model":"m","input":"in the background","max_output_tokens":4,"background":true}'; json_get "$TMP/r" '(j["status"], j["background"], j["usage"], j["output"])')" = "200('queued', True, None, [])" ]
bid=$(json_get "$TMP/r" 'j["id"]')
for i in $(seq 1 "$(scaled 50)"); do
  curl -s "$S/v1/responses/$bid" >"$TMP/bg"
  [ "$(json_get "$TMP/bg" 'j["status"]')" = queued ] || break
  sleep 0.1
done
check "background: kept when done, with usage" [ "$(json_get "$TMP/bg" '(j["status"] in ("completed", "incomplete"), j["usage"]["output_tokens"] >= 1, j["background"])')" = "(True, True, True)" ]
start_sim "$P3" --model m --speed 0.02 --responses-store || exit 1
S3=http://127.0.0.1:$P3
bid=$(curl -s "$S3/v1/responses" -d '{"model":"m","input":"slow","background":true}' | json_get /dev/stdin 'j["id"]')
check "background: running in the engine" [ "$(curl -s "$S3/debug/ranks" | json_get /dev/stdin 'j["ranks"][0]["running"] + j["ranks"][0]["waiting"]')" = 1 ]
check "cancel a running one: 200 cancelled" [ "$(curl -s -X POST "$S3/v1/responses/$bid/cancel" | json_get /dev/stdin 'j["status"]')" = cancelled ]
check "  its run aborted" [ "$(curl -s "$S3/debug/ranks" | json_get /dev/stdin 'j["ranks"][0]["running"] + j["ranks"][0]["waiting"]')" = 0 ]
check "  kept as cancelled" [ "$(curl -s "$S3/v1/responses/$bid" | json_get /dev/stdin 'j["status"]')" = cancelled ]
check "  cancelled twice: 400" [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$S3/v1/responses/$bid/cancel")" = 400 ]

# ---- Messages, as vLLM's converter answers: the chat completion's id,
# stop_reason, usage; its stream's events, then data: [DONE].
check "messages: 200" [ "$(post /v1/messages '{"model":"m","max_tokens":5,"system":"sys","messages":[{"role":"user","content":"hi"}]}')" = 200 ]
cp "$TMP/r" "$TMP/msg"
want=$(ntok '{"messages":[{"role":"system","content":"sys"},{"role":"user","content":"hi"}]}')
check "messages: shape and usage" py "$TMP/msg" "$want" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); u = j["usage"]
assert list(j) == ["id", "type", "role", "content", "model", "stop_reason", "usage"], list(j)
assert j["id"].startswith("chatcmpl-") and j["type"] == "message" and j["model"] == "m"
assert j["stop_reason"] in ("end_turn", "max_tokens") and u["input_tokens"] == int(sys.argv[2])
assert j["content"][0]["type"] == "text" and len(j["content"][0]["text"]) == u["output_tokens"] <= 5
PY
curl -sN "$S/v1/messages" -d '{"model":"m","max_tokens":4,"stream":true,"messages":[{"role":"user","content":"hi"}]}' >"$TMP/ms"
check "messages stream: events and usage" py "$TMP/ms" "$(ntok '{"messages":[{"role":"user","content":"hi"}]}')" <<'PY'
import json, sys
blocks = open(sys.argv[1]).read().strip().split("\n\n")
assert blocks[-1] == "data: [DONE]", blocks[-1]
evs = []
for b in blocks[:-1]:
    ev, data = b.split("\n"); d = json.loads(data[6:]); assert d["type"] == ev[7:]; evs.append(d)
types = [e["type"] for e in evs]; n = types.count("content_block_delta")
assert types == ["message_start", "content_block_start"] + ["content_block_delta"] * n + \
    ["content_block_stop", "message_delta", "message_stop"], types
start = evs[0]["message"]
assert "type" not in start and start["usage"] == {"input_tokens": int(sys.argv[2]), "output_tokens": 0}
assert evs[-2]["usage"]["output_tokens"] == n and evs[-2]["delta"]["stop_reason"] in ("end_turn", "max_tokens")
assert all(e["delta"]["type"] == "text_delta" and e["index"] == 0 for e in evs if e["type"] == "content_block_delta")
PY
check "count_tokens: the rendered prompt" [ "$(post /v1/messages/count_tokens '{"model":"m","messages":[{"role":"user","content":"hi"}]}'; json_get "$TMP/r" 'j["input_tokens"]')" = "200$(ntok '{"messages":[{"role":"user","content":"hi"}]}')" ]

# ---- Errors in each endpoint's shape; hostile bodies.
check "messages without max_tokens: 400" [ "$(post /v1/messages '{"model":"m","messages":[{"role":"user","content":"hi"}]}')" = 400 ]
check "  vLLM's validation shape, naming it" [ "$(json_get "$TMP/r" 'j["error"]["param"]')" = body.max_tokens ]
check "messages, unknown model: Anthropic's 404" [ "$(post /v1/messages '{"model":"zz","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}'; json_get "$TMP/r" '(j["type"], j["error"]["type"])')" = "404('error', 'NotFoundError')" ]
check "messages over the context: Anthropic's 400" [ "$(post /v1/messages '{"model":"m","max_tokens":100000,"messages":[{"role":"user","content":"hi"}]}'; json_get "$TMP/r" 'j["type"]')" = "400error" ]
check "responses, unknown item type: 400" [ "$(post /v1/responses '{"model":"m","input":[{"type":"frobnicate"}]}')" = 400 ]
check "  naming the item" grep -q '"param":"body.input' "$TMP/r"
check "responses, not JSON: 400" [ "$(post /v1/responses '{x')" = 400 ]
check "responses, unknown model: 404" [ "$(post /v1/responses '{"model":"zz","input":"x"}')" = 404 ]
check "responses, background and stream: 400" [ "$(post /v1/responses '{"model":"m","input":"x","background":true,"stream":true}')" = 400 ]
check "responses, background with store false: 400" [ "$(post /v1/responses '{"model":"m","input":"x","background":true,"store":false}')" = 400 ]
check "responses, nested deep: an answer, no crash" [ "$(post /v1/responses "{\"model\":\"m\",\"input\":$(printf '[%.0s' $(seq 1 5000))$(printf ']%.0s' $(seq 1 5000))}")" = 400 ]
check "the sim is still up" [ "$(curl -s -o /dev/null -w '%{http_code}' "$S/health")" = 200 ]

# ---- Tokenizer endpoints: vLLM's shapes, the counts kvgate tokenize gives.
check "tokenize a prompt" [ "$(post /tokenize '{"model":"m","prompt":"hello"}'; json_get "$TMP/r" '(j["count"], j["tokens"], j["token_strs"], j["max_model_len"] > 0)')" = "200(6, [256, 104, 101, 108, 108, 111], None, True)" ]
check "tokenize messages" [ "$(post /tokenize '{"model":"m","messages":[{"role":"user","content":"hi"}]}'; json_get "$TMP/r" 'j["count"]')" = "200$(ntok '{"messages":[{"role":"user","content":"hi"}]}')" ]
check "tokenize: token_strs" [ "$(post /tokenize '{"prompt":"hi","return_token_strs":true}'; json_get "$TMP/r" 'j["token_strs"]')" = "200['<|bos|>', 'h', 'i']" ]
check "detokenize" [ "$(post /detokenize '{"model":"m","tokens":[104,105]}'; json_get "$TMP/r" 'j["prompt"]')" = 200hi ]
check "detokenize: an id past the vocabulary is 400" [ "$(post /detokenize '{"tokens":[99999999]}')" = 400 ]

# ---- --disable-endpoints: an older build's 404s, chat still served.
start_sim "$P2" --model m --speed 200 --disable-endpoints responses,messages,tokenize || exit 1
S2=http://127.0.0.1:$P2
check "disabled responses: FastAPI's 404" [ "$(curl -s -w '%{http_code}' "$S2/v1/responses" -d '{"model":"m","input":"x"}')" = '{"detail":"Not Found"}404' ]
check "disabled messages: 404" [ "$(curl -s -o /dev/null -w '%{http_code}' "$S2/v1/messages" -d '{}')" = 404 ]
check "disabled responses/{id}: 404" [ "$(curl -s -o /dev/null -w '%{http_code}' "$S2/v1/responses/resp_x")" = 404 ]
check "disabled tokenize: 404" [ "$(curl -s -o /dev/null -w '%{http_code}' "$S2/tokenize" -d '{}')" = 404 ]
check "chat still 200" [ "$(curl -s -o /dev/null -w '%{http_code}' "$S2/v1/chat/completions" -d '{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}')" = 200 ]
check "an unknown --disable-endpoints name is refused" bash -c "! '$KVG_BIN' sim --port 0 --disable-endpoints chat,nope >/dev/null 2>&1"
finish
