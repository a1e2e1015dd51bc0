# Engines without /v1/responses and /v1/messages (sims with
# --disable-endpoints, as an older vLLM build or llama.cpp): kvgate learns it
# from their "no such path" 404, sends the requests as chat completions and
# translates the answers back, whole and streamed, so that the official
# clients (openai, @anthropic-ai/sdk) read them; usage is charged from the
# engine's chat usage and the prompt-token self-check stays exact. With
# --translate-apis the engines are never asked the path they lack. A
# model-not-found 404 is the engine's answer, not a missing endpoint.
. "$(dirname "$0")/lib.sh"
NM=${KVG_ROOT:?}/tests/node/node_modules
if [ ! -d "$NM/openai" ] || [ ! -d "$NM/@anthropic-ai/sdk" ] || ! command -v node >/dev/null; then
  skip "translation" "node or tests/node/node_modules (openai, @anthropic-ai/sdk) missing: bash scripts/install-deps.sh"
  finish
fi
S1=$(free_port); S2=$(free_port); GW=$(free_port); GW2=$(free_port)
start_sim "$S1" --model m --speed 500 --disable-endpoints responses,messages || exit 1
start_sim "$S2" --model m --speed 500 --disable-endpoints responses,messages || exit 1
start_serve "$GW" --worker-urls "http://127.0.0.1:$S1" "http://127.0.0.1:$S2" \
  --policy prefix_affinity --health-check-interval-secs 0.2 || exit 1
G=http://127.0.0.1:$GW
LOG=$TMP/serve-$GW.log

code() { curl -s -m 20 -o "$TMP/out" -w '%{http_code}' "$@"; }
jq_() { /usr/bin/python3 -c "import json,sys; j=json.load(open('$TMP/out')); print($1)"; }
check "the sims lack the endpoint (404 direct)" \
  [ "$(code "http://127.0.0.1:$S1/v1/responses" -d '{"model":"m","input":"x"}')" = 404 ]
check "Responses through kvgate: 200" \
  [ "$(code "$G/v1/responses" -d '{"model":"m","input":"hello there","max_output_tokens":4}')" = 200 ]
check "  ... a response object with usage" [ "$(jq_ "j['object']+str(j['usage']['output_tokens'])")" = response4 ]
check "  ... the worker was learnt as lacking /v1/responses" wait_grep 'does not serve /v1/responses' "$LOG"
check "  ... served as chat (access log)" grep -q '"path":"/v1/responses".*"served_as":"translated_to_chat"' "$LOG"
check "model not found: the engine's 404, no translation" \
  [ "$(code "$G/v1/messages" -d '{"model":"nope","max_tokens":4,"messages":[{"role":"user","content":"x"}]}')" = 404 ]

NODE_PATH=$NM node - "$G" >"$TMP/sdk.out" 2>&1 <<'JS'
const OpenAI = require('openai');
const Anthropic = require('@anthropic-ai/sdk');
const base = process.argv[2];
const say = (ok, name, why) => console.log(`${ok ? 'ok' : 'FAIL'} ${name}${ok ? '' : ': ' + why}`);
(async () => {
  const oa = new OpenAI({ baseURL: base + '/v1', apiKey: 'x', maxRetries: 0 });
  const an = new Anthropic({ baseURL: base, apiKey: 'x', maxRetries: 0 });
  try {
    const r = await oa.responses.create({ model: 'm', input: 'hello', max_output_tokens: 5 });
    say(r.object === 'response' && r.usage.output_tokens === 5 && r.output_text.length > 0,
        'openai responses.create (translated)', JSON.stringify(r).slice(0, 300));
    const st = await oa.responses.create({ model: 'm', input: 'stream me', max_output_tokens: 6,
                                           stream: true });
    let deltas = '', done = null, seq = [];
    for await (const ev of st) {
      seq.push(ev.sequence_number);
      if (ev.type === 'response.output_text.delta') deltas += ev.delta;
      if (ev.type === 'response.completed' || ev.type === 'response.incomplete') done = ev.response;
    }
    say(done && done.output[0].content[0].text === deltas && done.usage.output_tokens === 6 &&
        done.usage.input_tokens > 0 && seq.every((n, i) => n === i),
        'openai responses stream (translated)', JSON.stringify(done).slice(0, 300));
    const m = await an.messages.create({ model: 'm', max_tokens: 5,
                                         system: [{ type: 'text', text: 'be brief' }],
                                         messages: [{ role: 'user', content: 'hi' }] });
    say(m.type === 'message' && m.usage.output_tokens === 5 && m.stop_reason === 'max_tokens' &&
        m.content[0].type === 'text', 'anthropic messages.create (translated)', JSON.stringify(m));
    const ms = an.messages.stream({ model: 'm', max_tokens: 7,
                                    messages: [{ role: 'user', content: 'stream' }] });
    const fin = await ms.finalMessage();
    say(fin.usage.output_tokens === 7 && fin.content[0].text.length > 0,
        'anthropic messages.stream (translated)', JSON.stringify(fin));
  } catch (e) {
    say(false, 'sdk run', String(e && e.stack || e));
  }
})();
JS
while read -r st name; do
  case $st in ok) ok "$name" ;; FAIL) bad "$name" ;; esac
done < <(grep -E '^(ok|FAIL) ' "$TMP/sdk.out")
grep -q '^ok ' "$TMP/sdk.out" || { bad "the SDK script ran"; cat "$TMP/sdk.out"; }

# The prompt-token self-check: the chat the engine got is what kvgate rendered.
curl -s -m 5 "$G/workers" >"$TMP/w.json"
check "prompt-token checks ran, no mismatch" /usr/bin/python3 -c "
import json; ws=json.load(open('$TMP/w.json'))['workers']
c=sum(w['prompt_token_checks'] for w in ws); m=sum(w['prompt_token_mismatches'] for w in ws)
assert c >= 4 and m == 0, (c, m)"

# Declared: no 404 is ever asked for.
start_serve "$GW2" --worker-urls "http://127.0.0.1:$S1" --translate-apis responses messages \
  --health-check-interval-secs 0.2 || exit 1
LOG2=$TMP/serve-$GW2.log
check "--translate-apis: Messages 200 at once" \
  [ "$(code "http://127.0.0.1:$GW2/v1/messages" -d '{"model":"m","max_tokens":3,"messages":[{"role":"user","content":"x"}]}')" = 200 ]
check "  ... attempts 1 (no 404 first)" grep -q '"path":"/v1/messages".*"attempts":1.*"served_as":"translated_to_chat"\|"path":"/v1/messages".*"served_as":"translated_to_chat".*"attempts":1' "$LOG2"
check "  ... nothing learnt" [ "$(grep -c 'does not serve' "$LOG2")" = 0 ]
finish
