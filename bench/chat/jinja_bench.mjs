// The reference side of bench/chat: @huggingface/jinja rendering the same
// 4-message conversation with each template (compiled once), single thread.
// Prints: <name> <renders/s from the request text> <renders/s render only> <prompt bytes>
// "from text" includes JSON.parse and building the context, as kvgate's does.
import { createRequire } from 'module';
import fs from 'fs';
const ROOT = process.env.KVG_ROOT;
const require = createRequire(ROOT + '/tests/node/');
const { Template } = require('@huggingface/jinja');
const secs = Number(process.env.BENCH_SECS || 1);
const REQ = JSON.stringify({ model: 'm', messages: [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'Hello, how are you?' },
  { role: 'assistant', content: 'I am fine, thanks. How can I help?' },
  { role: 'user', content: 'Tell me a joke about routers.' }], add_generation_prompt: true });
const tok = (t) => (t && typeof t === 'object' ? t.content : t) ?? null;
function ctxOf(req, bos, eos) {
  const c = { messages: req.messages.map((m) => ({ role: m.role, content: m.content ?? '' })), tools: null };
  if (bos != null) c.bos_token = bos;
  if (eos != null) c.eos_token = eos;
  c.add_generation_prompt = req.add_generation_prompt ?? true;
  return c;
}
for (const arg of process.argv.slice(2)) {
  const [name, file] = arg.split('=');
  const cfg = JSON.parse(fs.readFileSync(file, 'utf8'));
  const tpl = new Template(cfg.chat_template);
  const bos = tok(cfg.bos_token), eos = tok(cfg.eos_token);
  const rates = [];
  let out = '';
  for (const mode of [0, 1]) {
    const fixed = ctxOf(JSON.parse(REQ), bos, eos);
    let n = 0; const t0 = performance.now(); let t;
    do {
      for (let k = 0; k < 100; k++) out = tpl.render(mode === 0 ? ctxOf(JSON.parse(REQ), bos, eos) : fixed);
      n += 100;
    } while ((t = performance.now()) - t0 < secs * 1000);
    rates.push(n / ((t - t0) / 1000));
  }
  console.log(`${name} ${rates[0].toFixed(0)} ${rates[1].toFixed(0)} ${Buffer.byteLength(out)}`);
}
