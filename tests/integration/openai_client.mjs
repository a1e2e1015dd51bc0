// The official `openai` npm SDK against kvgate serve in front of two
// `kvgate sim` engines: chat and completions, streaming and not, model list,
// and the SDK's typed errors. Processes are started here on 127.0.0.1 and
// stopped by PID; every wait is bounded.
import { createRequire } from 'node:module';
import { check, freePort, start, stopAll, summary, waitHttp, waitScale } from '../support/lib.mjs';

const require = createRequire(process.env.KVG_ROOT + '/tests/node/');
const OpenAI = require('openai').default ?? require('openai');

const timer = setTimeout(() => { console.log('FAIL timeout'); stopAll(); process.exit(1); }, 60000 * waitScale);

try {
  const [s1, s2, gw] = [await freePort(), await freePort(), await freePort()];
  start(['sim', '--port', String(s1), '--model', 'sim-a', '--speed', '20']);
  start(['sim', '--port', String(s2), '--model', 'sim-a', '--speed', '20']);
  await waitHttp(`http://127.0.0.1:${s1}/v1/models`, 10000);
  await waitHttp(`http://127.0.0.1:${s2}/v1/models`, 10000);
  start(['serve', '--port', String(gw), '--threads', '2', '--worker-urls',
         `http://127.0.0.1:${s1}`, `http://127.0.0.1:${s2}`]);
  check('gateway ready', await waitHttp(`http://127.0.0.1:${gw}/readiness`, 10000));

  const client = new OpenAI({ baseURL: `http://127.0.0.1:${gw}/v1`, apiKey: 'unused', maxRetries: 0 });

  const models = await client.models.list();
  check('models.list', models.data.length === 1 && models.data[0].id === 'sim-a');

  const chat = await client.chat.completions.create({
    model: 'sim-a', messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 12,
    ignore_eos: true,
  });
  check('chat.completions', chat.choices[0].message.content.length > 0 &&
        chat.usage.completion_tokens === 12, JSON.stringify(chat.usage));

  const stream = await client.chat.completions.create({
    model: 'sim-a', messages: [{ role: 'user', content: 'Stream please' }], max_tokens: 9,
    ignore_eos: true, stream: true, stream_options: { include_usage: true },
  });
  let text = '', chunks = 0, usage = null;
  for await (const ev of stream) {
    chunks++;
    if (ev.choices.length) text += ev.choices[0].delta.content ?? '';
    if (ev.usage) usage = ev.usage;
  }
  check('chat stream: tokens', text.length > 0 && chunks >= 9, `chunks=${chunks}`);
  check('chat stream: usage', usage && usage.completion_tokens === 9);

  const comp = await client.completions.create({ model: 'sim-a', prompt: 'Once', max_tokens: 5, ignore_eos: true });
  check('completions', comp.usage.completion_tokens === 5 && typeof comp.choices[0].text === 'string');

  const cstream = await client.completions.create({ model: 'sim-a', prompt: 'Once', max_tokens: 5, ignore_eos: true, stream: true });
  let ctext = '';
  for await (const ev of cstream) ctext += ev.choices[0]?.text ?? '';
  check('completions stream', ctext.length === 5, JSON.stringify(ctext));

  const raw = await client.chat.completions.create({
    model: 'sim-a', messages: [{ role: 'user', content: 'hdr' }], max_tokens: 1,
  }).withResponse();
  check('x-kvgate-worker header', /^http:\/\/127\.0\.0\.1:\d+$/.test(raw.response.headers.get('x-kvgate-worker')));
  check('x-request-id header', (raw.response.headers.get('x-request-id') || '').startsWith('chatcmpl-'));

  try {
    await client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] });
    check('unknown model raises', false);
  } catch (e) {
    check('unknown model: NotFoundError', e instanceof OpenAI.NotFoundError && e.status === 404, String(e));
  }
  try {
    await client.completions.create({ model: 'sim-a', prompt: 'x', max_tokens: 10000000 });
    check('too long raises', false);
  } catch (e) {
    check('over the context: BadRequestError', e instanceof OpenAI.BadRequestError, String(e));
  }
} catch (e) {
  check('no exception', false, String(e && e.stack || e));
} finally {
  clearTimeout(timer);
  stopAll();
}
process.exit(summary());
