# kvgate sim's Responses, Messages and embeddings read by the official
# clients (tests/node: the openai and @anthropic-ai/sdk packages), stream and
# not: what they parse (events, final objects, usage) agrees with what the
# sim sent. sim_endpoints.sh checks the bytes; this, that real clients
# accept them.
. "$(dirname "$0")/lib.sh"
NM=${KVG_ROOT:?}/tests/node/node_modules
if [ ! -d "$NM/openai" ] || [ ! -d "$NM/@anthropic-ai/sdk" ] || ! command -v node >/dev/null; then
  skip "official clients" "node or tests/node/node_modules (openai, @anthropic-ai/sdk) missing: bash scripts/install-deps.sh"
  finish
fi
P1=$(free_port)
start_sim "$P1" --model m --speed 200 --responses-store || exit 1
NODE_PATH=$NM node - "http://127.0.0.1:$P1" >"$TMP/sdk.out" 2>&1 <<'JS'
const OpenAI = require('openai');
const Anthropic = require('@anthropic-ai/sdk');
const base = process.argv[2];
const say = (ok, name, why) => console.log(`${ok ? 'ok' : 'FAIL'} ${name}${ok ? '' : ': ' + why}`);
(async () => {
  const oa = new OpenAI({ baseURL: base + '/v1', apiKey: 'x' });
  const an = new Anthropic({ baseURL: base, apiKey: 'x' });
  try {
    const r = await oa.responses.create({ model: 'm', input: 'hello', max_output_tokens: 5 });
    say(r.object === 'response' && r.output_text.length === r.usage.output_tokens,
        'openai responses.create', JSON.stringify(r).slice(0, 300));
    const again = await oa.responses.retrieve(r.id);
    say(again.id === r.id && again.output_text === r.output_text, 'openai responses.retrieve', again.id);
    const next = await oa.responses.create({ model: 'm', input: 'more', max_output_tokens: 3,
                                             previous_response_id: r.id });
    say(next.usage.input_tokens > r.usage.input_tokens, 'openai previous_response_id', next.usage.input_tokens);
    const st = await oa.responses.create({ model: 'm', input: 'stream', max_output_tokens: 4, stream: true });
    let deltas = '', done = null, seq = [];
    for await (const ev of st) {
      seq.push(ev.sequence_number);
      if (ev.type === 'response.output_text.delta') deltas += ev.delta;
      if (ev.type === 'response.completed') done = ev.response;
    }
    say(done && done.output[0].content[0].text === deltas && done.usage.output_tokens === deltas.length &&
        seq.every((n, i) => n === i),
        'openai responses stream', deltas);
    const del = await oa.responses.delete(r.id).then(() => true, (e) => String(e));
    say(del === true, 'openai responses.delete', del);
    const gone = await oa.responses.retrieve(r.id).then(() => 'found', (e) => e.status);
    say(gone === 404, 'openai retrieve after delete: 404', gone);
    const emb = await oa.embeddings.create({ model: 'm', input: ['a', 'b'] });
    say(emb.data.length === 2 && emb.data[0].embedding.length === 16, 'openai embeddings (base64 by default)',
        JSON.stringify(emb.data[0]).slice(0, 100));

    const m = await an.messages.create({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
    say(m.type === 'message' && m.content[0].text.length === m.usage.output_tokens, 'anthropic messages.create',
        JSON.stringify(m));
    const ms = an.messages.stream({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    ms.on('text', (t) => { text += t; });
    const fin = await ms.finalMessage();
    say(fin.content[0].text === text && fin.usage.output_tokens === text.length && fin.stop_reason,
        'anthropic messages.stream', JSON.stringify(fin));
    const ct = await an.messages.countTokens({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    say(ct.input_tokens === m.usage.input_tokens, 'anthropic countTokens', JSON.stringify(ct));
    const err = await an.messages.create({ model: 'zz', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] })
      .then(() => 'answered', (e) => e instanceof Anthropic.NotFoundError ? 'notfound' : String(e));
    say(err === 'notfound', 'anthropic unknown model: NotFoundError', err);
  } catch (e) {
    say(false, 'no exception', e && e.stack ? e.stack : String(e));
  }
})();
JS
while read -r verdict name; do
  case "$verdict" in ok) ok "$name" ;; FAIL) bad "$name" ;; esac
done < <(grep -E '^(ok|FAIL) ' "$TMP/sdk.out")
check "the clients ran every check" [ "$(grep -cE '^(ok|FAIL) ' "$TMP/sdk.out")" = 11 ]
[ "$FAILED" = 0 ] || cat "$TMP/sdk.out"
finish
