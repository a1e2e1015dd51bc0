// The official SDKs read what kvgate's translation makes of an engine's
// chat completions answer (tests/tools/api_xlate.c over src/api/): the
// `openai` SDK's Responses stream and object, `@anthropic-ai/sdk`'s
// Messages stream and answer. A local HTTP server on 127.0.0.1 hands the
// translated bytes to each client; every wait is bounded.
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { createRequire } from 'node:module';
import { check, freePort, summary, waitScale } from '../support/lib.mjs';

const require = createRequire(process.env.KVG_ROOT + '/tests/node/');
const OpenAI = require('openai').default ?? require('openai');
const Anthropic = require('@anthropic-ai/sdk').default ?? require('@anthropic-ai/sdk');
const tool = process.env.KVG_TOOLS + '/api_xlate';

const timer = setTimeout(() => { console.log('FAIL timeout'); process.exit(1); }, 30000 * waitScale);

const chunk = (delta, finish = null, extra = {}) =>
  'data: ' + JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm',
    choices: [{ index: 0, delta, finish_reason: finish }], ...extra }) + '\n\n';
const chatStream =
  chunk({ role: 'assistant', content: '' }) + chunk({ reasoning: 'Let me' }) +
  chunk({ reasoning: ' think' }) + chunk({ content: 'Hello' }) + chunk({ content: ' wörld "q"' }) +
  chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'ls', arguments: '' } }] }) +
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"d":' } }] }) +
  chunk({ tool_calls: [{ index: 0, function: { arguments: '"/"}' } }] }) +
  chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'cat', arguments: '{}' } }] }) +
  chunk({}, 'tool_calls') +
  'data: ' + JSON.stringify({ id: 'c1', choices: [], usage: { prompt_tokens: 12, completion_tokens: 9,
    total_tokens: 21, prompt_tokens_details: { cached_tokens: 8 } } }) + '\n\n' +
  'data: [DONE]\n\n';
const chatWhole = JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'm',
  choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: 'Hello wörld "q"',
    reasoning: 'Let me think', tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'ls', arguments: '{"d":"/"}' } }] } }],
  usage: { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 } });

const xlate = (api, mode, input, split) =>
  execFileSync(tool, split ? [api, mode, 'split'] : [api, mode], { input, timeout: 10000 * waitScale });

let next = { type: 'application/json', body: Buffer.from('{}') };
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': next.type });
    res.end(next.body);
  });
});
const port = await freePort();
await new Promise((r) => server.listen(port, '127.0.0.1', r));
const serve = (body, stream) => { next = { type: stream ? 'text/event-stream' : 'application/json', body }; };

try {
  const oa = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'k', maxRetries: 0 });
  const an = new Anthropic({ baseURL: `http://127.0.0.1:${port}`, apiKey: 'k', maxRetries: 0 });

  // the translated stream is the same however the engine's bytes were split
  check('responses stream split-invariant',
        xlate('responses', 'stream', chatStream).equals(xlate('responses', 'stream', chatStream, true)));
  check('messages stream split-invariant',
        xlate('messages', 'stream', chatStream).equals(xlate('messages', 'stream', chatStream, true)));

  serve(xlate('responses', 'stream', chatStream), true);
  const rs = oa.responses.stream({ model: 'sim-coder', input: 'hi' });
  const types = [];
  rs.on('event', (e) => types.push(e.type));
  const fin = await rs.finalResponse();
  check('responses stream: output_text', fin.output_text === 'Hello wörld "q"', JSON.stringify(fin.output_text));
  const calls = fin.output.filter((o) => o.type === 'function_call');
  check('responses stream: two function calls', calls.length === 2 && calls[0].call_id === 'call_a' &&
        calls[0].arguments === '{"d":"/"}' && calls[1].name === 'cat', JSON.stringify(calls));
  const rsn = fin.output.find((o) => o.type === 'reasoning');
  check('responses stream: reasoning text', rsn && rsn.content[0].text === 'Let me think', JSON.stringify(rsn));
  check('responses stream: usage', fin.usage.input_tokens === 12 && fin.usage.output_tokens === 9 &&
        fin.usage.input_tokens_details.cached_tokens === 8, JSON.stringify(fin.usage));
  check('responses stream: first and last events', types[0] === 'response.created' &&
        types[types.length - 1] === 'response.completed', types.join(','));

  serve(xlate('responses', 'whole', chatWhole), false);
  const ro = await oa.responses.create({ model: 'sim-coder', input: 'hi' });
  check('responses object: output_text', ro.output_text === 'Hello wörld "q"', JSON.stringify(ro.output_text));
  check('responses object: status and call', ro.status === 'completed' &&
        ro.output.some((o) => o.type === 'function_call' && o.name === 'ls'), JSON.stringify(ro.output));

  serve(xlate('messages', 'stream', chatStream), true);
  const ms = an.messages.stream({ model: 'sim-coder', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
  const fm = await ms.finalMessage();
  const kinds = fm.content.map((b) => b.type).join(',');
  check('messages stream: blocks', kinds === 'thinking,text,tool_use,tool_use', kinds);
  check('messages stream: thinking with signature', fm.content[0].thinking === 'Let me think' &&
        /^[0-9a-f]{32}$/.test(fm.content[0].signature), JSON.stringify(fm.content[0]));
  check('messages stream: text', fm.content[1].text === 'Hello wörld "q"', JSON.stringify(fm.content[1]));
  check('messages stream: tool input parsed', fm.content[2].id === 'call_a' && fm.content[2].input.d === '/' &&
        fm.content[3].name === 'cat', JSON.stringify(fm.content.slice(2)));
  check('messages stream: stop_reason and usage', fm.stop_reason === 'tool_use' &&
        fm.usage.input_tokens === 12 && fm.usage.output_tokens === 9, JSON.stringify([fm.stop_reason, fm.usage]));

  serve(xlate('messages', 'whole', chatWhole), false);
  const mo = await an.messages.create({ model: 'sim-coder', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
  check('messages answer: blocks', mo.content.map((b) => b.type).join(',') === 'thinking,text,tool_use' &&
        mo.content[2].input.d === '/' && mo.stop_reason === 'tool_use', JSON.stringify(mo));
} catch (e) {
  check('no exception', false, String(e && e.stack || e));
}
clearTimeout(timer);
server.close();
process.exit(summary());
