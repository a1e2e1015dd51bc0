// The status page in a real browser: headless Chromium (Debian's) driven by
// playwright-core, against kvgate serve with API keys in front of two
// `kvgate sim` engines. The page must load nothing from outside, show both
// workers and charts with data, the quota table with what the app key used
// (read without charging), answer the /debug/route form, and be closed
// to a browser without the admin key. A screenshot goes to $KVG_UI_SHOT (or
// the temp folder). Processes start on 127.0.0.1 and are stopped by PID.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { check, freePort, start, stopAll as stopProcs, summary, waitHttp, waitScale } from '../support/lib.mjs';

const require = createRequire(process.env.KVG_ROOT + '/tests/node/');
const { chromium } = require('playwright-core');
const BIN = process.env.KVG_BIN;
let browser = null;

async function stopAll() {
  if (browser) { try { await browser.close(); } catch {} }
  stopProcs();
}
const timer = setTimeout(async () => { console.log('FAIL timeout'); await stopAll(); process.exit(1); }, 90000 * waitScale);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kvgate-ui-'));
try {
  const [s1, s2, gw] = [await freePort(), await freePort(), await freePort()];
  start(['sim', '--port', String(s1), '--model', 'm', '--speed', '50']);
  start(['sim', '--port', String(s2), '--model', 'm', '--speed', '50']);
  await waitHttp(`http://127.0.0.1:${s1}/v1/models`, 10000);
  await waitHttp(`http://127.0.0.1:${s2}/v1/models`, 10000);
  const admin = 'sk-admin-' + Math.random().toString(36).slice(2);
  const user = 'sk-user-' + Math.random().toString(36).slice(2);
  const hash = (k) => execFileSync(BIN, ['keys', 'hash', k]).toString().trim();
  fs.writeFileSync(path.join(tmp, 'keys.yaml'),
    `keys:\n  - name: ops\n    hash: ${hash(admin)}\n    admin: true\n  - name: app\n    hash: ${hash(user)}\n` +
    // A calendar month is a fixed window: its count is exact, whenever the test runs.
    `    limits: {requests_per_month: 1000000}\n`);
  start(['serve', '--port', String(gw), '--keys', path.join(tmp, 'keys.yaml'),
         '--health-check-interval-secs', '1',
         '--worker-urls', `http://127.0.0.1:${s1}`, `http://127.0.0.1:${s2}`]);
  const G = `http://127.0.0.1:${gw}`;
  check('gateway ready', await waitHttp(`${G}/readiness`, 10000));
  // Some traffic, so the charts have something to draw.
  let sent = 0;
  for (let i = 0; i < 12; i++) {
    const r = await fetch(`${G}/v1/completions`, { method: 'POST',
      headers: { authorization: `Bearer ${user}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', prompt: 'hello ' + i, max_tokens: 4 }) });
    sent += r.status === 200;
  }

  const plain = await fetch(`${G}/ui`);
  check('no key: /ui is 401 with a Basic login prompt',
        plain.status === 401 && /basic/i.test(plain.headers.get('www-authenticate') || ''));
  const asUser = await fetch(`${G}/ui/state`, { headers: { authorization: `Bearer ${user}` } });
  check('a non-admin key: /ui/state is 403', asUser.status === 403);

  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync',
           ],
  });
  const ctx = await browser.newContext({ httpCredentials: { username: 'ops', password: admin },
                                          viewport: { width: 1280, height: 1100 } });
  const page = await ctx.newPage();
  const outside = [];
  page.on('request', (r) => { if (!r.url().startsWith(G)) outside.push(r.url()); });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const resp = await page.goto(`${G}/ui`);
  check('the admin opens /ui', resp.status() === 200);
  await page.waitForFunction(() => document.querySelectorAll('#workers tbody tr').length >= 2,
                             null, { timeout: 15000 * waitScale }).catch(() => {});
  const rows = await page.$$eval('#workers tbody tr', (trs) => trs.map((t) => t.dataset.url));
  check('both workers listed', rows.includes(`http://127.0.0.1:${s1}`) && rows.includes(`http://127.0.0.1:${s2}`),
        JSON.stringify(rows));
  const health = await page.$$eval('#workers tbody tr td:nth-child(3)', (tds) => tds.map((t) => t.textContent));
  const modes = await page.$$eval('#workers tbody tr td:nth-child(5)', (tds) => tds.map((t) => t.textContent));
  check('each worker\'s routing mode shown', modes.length >= 2 && modes.every((m) => /^(exact|approximate|degraded|load_only)/.test(m)), JSON.stringify(modes));
  check('their health shown', health.length >= 2 && health.every((h) => h === 'healthy'), JSON.stringify(health));
  // Traffic while the page watches: 4 s of requests, bounded in count.
  const load = (async () => {
    const end = Date.now() + 4000;
    for (let i = 0; i < 400 && Date.now() < end; i++) {
      const r = await fetch(`${G}/v1/completions`, { method: 'POST',
        headers: { authorization: `Bearer ${user}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', prompt: 'load ' + i, max_tokens: 8 }) }).catch(() => null);
      if (r) sent += r.status === 200;
    }
  })();
  await load;
  // A line needs two samples or more (one a second, redrawn every two).
  const drawn = (sel) => Array.from(document.querySelectorAll(sel + ' path'))
    .filter((p) => (p.getAttribute('d') || '').includes('L')).length;
  await page.waitForFunction(drawn, '#c_rate', { timeout: 15000 * waitScale }).catch(() => {});
  check('the request-rate chart draws a line', (await page.evaluate(drawn, '#c_rate')) >= 1);
  await page.waitForFunction(drawn, '#c_ttft', { timeout: 15000 * waitScale }).catch(() => {});
  check('the TTFT chart draws the traffic it saw', (await page.evaluate(drawn, '#c_ttft')) >= 1);
  check('the per-worker chart draws one line per worker',
        (await page.evaluate(drawn, '#c_inflight')) >= 2);
  // The quota table: the app key's monthly requests, as many as were answered.
  const quotaRow = () => {
    const tr = document.querySelector('#quota tbody tr[data-scope="key:app"]');
    return tr ? Array.from(tr.children).map((td) => td.textContent) : null;
  };
  await page.waitForFunction((n) => {
    const tr = document.querySelector('#quota tbody tr[data-scope="key:app"]');
    return tr && tr.children[3].textContent === String(n);
  }, sent, { timeout: 15000 * waitScale }).catch(() => {});
  const qr = await page.evaluate(quotaRow);
  check('the quota table shows the app key\'s requests this month', qr !== null &&
        qr[1] === 'app' && /requests per month: 1000000/.test(qr[2]) && qr[3] === String(sent),
        JSON.stringify({ qr, sent }));
  check('... and the store it read', /store memory/.test(await page.textContent('#quota_note')));
  await page.fill('#body', JSON.stringify({ model: 'm', prompt: 'hello 1' }));
  await page.click('#route');
  await page.waitForFunction(() => document.querySelectorAll('#scores tbody tr').length >= 2, null, { timeout: 10000 * waitScale }).catch(() => {});
  const chosen = await page.textContent('#chosen');
  check('the route form answers which worker', /chosen: http:\/\/127\.0\.0\.1:/.test(chosen || ''), chosen);
  check('... with a row per candidate', (await page.$$('#scores tbody tr')).length >= 2);
  check('no request left the gateway', outside.length === 0, outside.join(' '));
  check('no script error', errors.length === 0, errors.join(' | '));
  const shot = process.env.KVG_UI_SHOT || path.join(tmp, 'ui.png');
  await page.screenshot({ path: shot, fullPage: true });
  check('screenshot taken', fs.statSync(shot).size > 10000);
  console.log('# screenshot: ' + shot);
} catch (e) {
  check('no exception', false, String(e && e.stack || e));
}
clearTimeout(timer);
await stopAll();
process.exit(summary());
