// Two kvgate replicas enforce one token quota through Redis, seen by the
// official `openai` SDK: successes carry x-ratelimit-* headers, the request
// over the shared limit gets a RateLimitError (429, Retry-After,
// rate_limit_exceeded); with Redis gone the replicas fail open, at once.
// Every process is started here on 127.0.0.1 and stopped by PID.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { check, freePort, sleep, start, startCmd, stopAll, summary, waitHttp, waitPort, waitScale } from '../support/lib.mjs';

const require = createRequire(process.env.KVG_ROOT + '/tests/node/');
const OpenAI = require('openai').default ?? require('openai');
const BIN = process.env.KVG_BIN;
const timer = setTimeout(() => { console.log('FAIL timeout'); stopAll(); process.exit(1); }, 90000 * waitScale);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kvgate-redis-'));

try {
  const [rp, sp, g1, g2] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const redis = startCmd('redis-server', ['--port', String(rp), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
  check('redis up', await waitPort(rp, 10000));
  start(['sim', '--port', String(sp), '--model', 'm', '--speed', '50']);
  await waitHttp(`http://127.0.0.1:${sp}/v1/models`, 10000);
  const key = 'sk-shared-' + Math.random().toString(36).slice(2);
  const hash = execFileSync(BIN, ['keys', 'hash', key]).toString().trim();
  fs.writeFileSync(path.join(tmp, 'keys.yaml'),
    `keys:\n  - name: team\n    hash: ${hash}\n    limits: {tokens_per_minute: 300}\n`);
  for (const g of [g1, g2])
    start(['serve', '--port', String(g), '--threads', '1', '--keys', path.join(tmp, 'keys.yaml'),
                '--quota-store', `redis://127.0.0.1:${rp}`, '--worker-urls', `http://127.0.0.1:${sp}`]);
  check('replica 1 ready', await waitHttp(`http://127.0.0.1:${g1}/readiness`, 10000));
  check('replica 2 ready', await waitHttp(`http://127.0.0.1:${g2}/readiness`, 10000));
  const clients = [g1, g2].map((g) => new OpenAI({ baseURL: `http://127.0.0.1:${g}/v1`, apiKey: key, maxRetries: 0 }));

  // Each request: ~17 prompt tokens reserved (body / 4) + 50 output, real ~52.
  let ok = 0, limited = null, lastHeaders = null;
  for (let i = 0; i < 20 && !limited; i++) {
    try {
      const r = await clients[i % 2].completions.create({ model: 'm', prompt: 'x', max_tokens: 50, ignore_eos: true }).withResponse();
      lastHeaders = r.response.headers;
      ok++;
    } catch (e) { limited = e; }
  }
  check('one shared budget across replicas: 4..6 admitted', ok >= 4 && ok <= 6, `admitted ${ok}`);
  check('success carries x-ratelimit-limit-tokens', lastHeaders && lastHeaders.get('x-ratelimit-limit-tokens') === '300');
  check('success carries x-ratelimit-remaining-tokens', lastHeaders && lastHeaders.get('x-ratelimit-remaining-tokens') !== null);
  check('over the limit: RateLimitError', limited instanceof OpenAI.RateLimitError, String(limited));
  check('429 status', limited && limited.status === 429);
  check('429: Retry-After', limited && Number(limited.headers?.get?.('retry-after') ?? limited.headers?.['retry-after']) >= 1);
  const rem = limited && (limited.headers?.get?.('x-ratelimit-remaining-tokens') ?? limited.headers?.['x-ratelimit-remaining-tokens']);
  check('429: x-ratelimit-remaining-tokens', rem !== undefined && rem !== null, String(rem));
  check('429: type rate_limit_exceeded', limited && limited.type === 'rate_limit_exceeded', limited && limited.type);

  // Redis goes away: fail open (the default), no hang.
  process.kill(redis.pid, 'SIGKILL');
  await sleep(300);
  const t0 = Date.now();
  let open = 0;
  for (let i = 0; i < 4; i++) {
    try { await clients[i % 2].completions.create({ model: 'm', prompt: 'x', max_tokens: 2 }); open++; } catch (e) {}
  }
  check('Redis down: fail open, all 4 served', open === 4, `served ${open}`);
  check('Redis down: no hang (< 3 s for 4 requests)', Date.now() - t0 < 3000, `${Date.now() - t0} ms`);
} catch (e) {
  check('no exception', false, String(e && e.stack || e));
} finally {
  clearTimeout(timer);
  stopAll();
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(summary());
