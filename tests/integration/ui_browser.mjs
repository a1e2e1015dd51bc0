// The status page in a real browser: headless Chromium (Debian's) driven by
// playwright-core, against kvgate serve with API keys and an autoscaler
// (external actuator) in front of three `kvgate sim` engines serving two
// models. At 1280x800 the page must load nothing from outside, log no
// error, fit the width (no table or page wider than the viewport), show the
// workers, charts with clock times on x and units on y drawing the traffic
// (requests, tokens, TTFT and ITL of streams), the models table, the
// autoscaler as a table, the quota table with what the app key used (read
// without charging), a route form prefilled with a served model that
// routes, and the real reason when no worker serves a model; and be closed
// to a browser without the admin key. A screenshot goes to $KVG_UI_SHOT (or
// the test's temp folder), its path printed. Processes start on 127.0.0.1
// and are stopped by PID.
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
  const [s1, s2, s3, gw] = [await freePort(), await freePort(), await freePort(), await freePort()];
  start(['sim', '--port', String(s1), '--model', 'm', '--speed', '50']);
  start(['sim', '--port', String(s2), '--model', 'm', '--speed', '50']);
  start(['sim', '--port', String(s3), '--model', 'm2', '--speed', '50']);
  // A second gateway in vLLM's PD mode, for the page's PD counters.
  const [pp, ps, pdd, gpd] = [await freePort(), await freePort(), await freePort(), await freePort()];
  start(['sim', '--port', String(pp), '--model', 'pdm', '--role', 'prefill', '--side-channel-port', String(ps)]);
  start(['sim', '--port', String(pdd), '--model', 'pdm', '--role', 'decode']);
  for (const p of [s1, s2, s3, pp, pdd]) await waitHttp(`http://127.0.0.1:${p}/v1/models`, 10000);
  start(['serve', '--port', String(gpd), '--vllm-pd-disaggregation', '--prefill', `http://127.0.0.1:${pp}`, 'none',
         '--decode', `http://127.0.0.1:${pdd}`, '--pd-threshold-tokens', '64']);
  const admin = 'sk-admin-' + Math.random().toString(36).slice(2);
  const user = 'sk-user-' + Math.random().toString(36).slice(2);
  const hash = (k) => execFileSync(BIN, ['keys', 'hash', k]).toString().trim();
  fs.writeFileSync(path.join(tmp, 'keys.yaml'),
    `keys:\n  - name: ops\n    hash: ${hash(admin)}\n    admin: true\n  - name: app\n    hash: ${hash(user)}\n` +
    // A calendar month is a fixed window: its count is exact, whenever the test runs.
    `    limits: {requests_per_month: 1000000}\n`);
  // The external actuator changes nothing: the table shows what it would ask.
  fs.writeFileSync(path.join(tmp, 'as.yaml'), 'interval_secs: 0.5\nactuator: external\npools:\n' +
    '  - {name: agg, model: m, planner: kvgate, min_replicas: 1, max_replicas: 4, ttft_secs: 1.0,\n' +
    '     itl_secs: 0.05, prefill_tokens_per_sec: 20, decode_tokens_per_sec: 5}\n');
  start(['serve', '--port', String(gw), '--keys', path.join(tmp, 'keys.yaml'),
         '--health-check-interval-secs', '1', '--autoscale', path.join(tmp, 'as.yaml'),
         '--worker-urls', `http://127.0.0.1:${s1}`, `http://127.0.0.1:${s2}`, `http://127.0.0.1:${s3}`]);
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
                                          viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  const outside = [];
  page.on('request', (r) => { if (!r.url().startsWith(G)) outside.push(r.url()); });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  // Every console error counts but the 503 of the route form's dry run for
  // a model nobody serves, which the test asks for below.
  page.on('console', (m) => {
    if (m.type() === 'error' && !(m.location().url === `${G}/debug/route` && /\b503\b/.test(m.text())))
      errors.push('console: ' + m.text() + ' ' + m.location().url);
  });
  const resp = await page.goto(`${G}/ui`);
  check('the admin opens /ui', resp.status() === 200);
  await page.waitForFunction(() => document.querySelectorAll('#workers tbody tr').length >= 2,
                             null, { timeout: 15000 * waitScale }).catch(() => {});
  const rows = await page.$$eval('#workers tbody tr', (trs) => trs.map((t) => t.dataset.url));
  check('every worker listed', [s1, s2, s3].every((p) => rows.includes(`http://127.0.0.1:${p}`)),
        JSON.stringify(rows));
  const health = await page.$$eval('#workers tbody tr td:nth-child(4)', (tds) => tds.map((t) => t.textContent));
  const modes = await page.$$eval('#workers tbody tr td:nth-child(6) span', (tds) => tds.map((t) => t.textContent));
  check('each worker\'s routing mode shown', modes.length >= 2 && modes.every((m) => /^(exact|approximate|degraded|load_only)/.test(m)), JSON.stringify(modes));
  check('their health shown', health.length >= 2 && health.every((h) => h === 'healthy'), JSON.stringify(health));
  // Traffic while the page watches: 3 s of requests, bounded in count; a
  // stream in three, so TTFT and ITL have something to measure, to both models.
  const load = (async () => {
    const end = Date.now() + 3000;
    for (let i = 0; i < 400 && Date.now() < end; i++) {
      const stream = i % 3 === 0;
      const r = await fetch(`${G}/v1/completions`, { method: 'POST',
        headers: { authorization: `Bearer ${user}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: i % 4 === 3 ? 'm2' : 'm', prompt: 'load ' + i, max_tokens: 8, stream,
                               stream_options: stream ? { include_usage: true } : undefined }) }).catch(() => null);
      if (r) { sent += r.status === 200; await r.arrayBuffer().catch(() => null); }
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
        (await page.evaluate(drawn, '#c_inflight')) >= 3);
  await page.waitForFunction(drawn, '#c_itl', { timeout: 15000 * waitScale }).catch(() => {});
  check('the ITL chart draws the streams', (await page.evaluate(drawn, '#c_itl')) >= 1);
  check('the tokens chart draws prompt and completion', (await page.evaluate(drawn, '#c_tokens')) >= 2);
  // Axes: every chart names its unit, and its x axis has clock times.
  const axes = await page.$$eval('svg.c', (svgs) => svgs.filter((g) => !g.closest('[hidden]')).map((g) => ({
    id: g.id, unit: (g.querySelector('.yunit') || {}).textContent || '',
    times: Array.from(g.querySelectorAll('.xtick')).map((t) => t.textContent),
    yticks: g.querySelectorAll('.ytick').length })));
  const units = Object.fromEntries(axes.map((a) => [a.id, a.unit]));
  check('each chart has clock times on x and ticks on y', axes.length >= 9 &&
        axes.every((a) => a.times.length >= 1 && a.times.every((t) => /^\d\d:\d\d:\d\d$/.test(t)) && a.yticks >= 2),
        JSON.stringify(axes));
  check('... and its unit', units.c_rate === 'req/s' && units.c_tokens === 'tokens/s' &&
        units.c_errors === '% of answers' && units.c_ttft === 'seconds' && units.c_itl === 'ms' &&
        /%/.test(units.c_hit || ''), JSON.stringify(units));
  // Two models served: a row each, with their workers.
  const modelRows = await page.$$eval('#models tbody tr', (trs) => trs.map((t) => [t.dataset.model, t.children[2].textContent]));
  check('the models table has a row per served model', !(await page.$eval('#models_sec', (e) => e.hidden)) &&
        JSON.stringify(modelRows) === JSON.stringify([['m', '2 / 2'], ['m2', '1 / 1']]), JSON.stringify(modelRows));
  check('... and a chart line per model', (await page.evaluate(drawn, '#c_models')) >= 2);
  // Each sample's per-model numbers are its workers' sums (all of them).
  const sums = await page.evaluate(async ([a, b, c]) => {
    const st = await (await fetch('/ui/state')).json();
    let bad = 0, busy = 0;
    for (const s of st.history.samples) {
      const w = (p) => s.workers['http://127.0.0.1:' + p] || [0, 0, 0, 0];
      const m = s.models.m || [0, 0], m2 = s.models.m2 || [0, 0];
      // Six significant digits each (ui/history.c): equal to a thousandth.
      const near = (x, y) => Math.abs(x - y) <= 1e-3 * Math.max(1, x);
      if (!near(m[0], w(a)[3] + w(b)[3]) || !near(m2[0], w(c)[3])) bad++;
      busy += m[0] > 0 && m2[0] > 0;
    }
    return { bad, busy };
  }, [s1, s2, s3]);
  check('per-model rates are their workers\' sums', sums.bad === 0 && sums.busy >= 1, JSON.stringify(sums));
  // The autoscaler as a table, not JSON.
  await page.waitForFunction(() => document.querySelector('#autoscale tbody tr[data-pool="agg"]'),
                             null, { timeout: 10000 * waitScale }).catch(() => {});
  const asRow = await page.$$eval('#autoscale tbody tr[data-pool="agg"] td', (tds) => tds.map((t) => t.textContent));
  check('the autoscaler table has the pool, its ready replicas and a desired count', asRow.length === 11 &&
        asRow[1] === 'm' && asRow[3] === 'kvgate' && asRow[4] === '3' && /^\d+$/.test(asRow[7]) && asRow[8].length > 0,
        JSON.stringify(asRow));
  check('... and no raw JSON anywhere', !(await page.textContent('main')).includes('"pools"'));
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
  // The route form starts with a model the pool serves, and routes it.
  const pre = await page.inputValue('#body');
  let preModel = null;
  try { preModel = JSON.parse(pre).model; } catch {}
  check('the route form is prefilled with a served model', preModel === 'm' || preModel === 'm2', pre);
  await page.click('#route');
  await page.waitForFunction(() => document.querySelectorAll('#scores tbody tr').length >= 1, null, { timeout: 10000 * waitScale }).catch(() => {});
  const chosen = await page.textContent('#chosen');
  const servesPre = preModel === 'm2' ? [s3] : [s1, s2];
  check('the prefilled request routes to a worker of that model',
        servesPre.some((p) => (chosen || '') === `chosen: http://127.0.0.1:${p}`), chosen);
  check('... with a row per candidate', (await page.$$('#scores tbody tr')).length === servesPre.length);
  await page.fill('#body', JSON.stringify({ model: 'nope', prompt: 'hello 1' }));
  await page.click('#route');
  await page.waitForFunction(() => /no worker/.test(document.querySelector('#chosen').textContent), null, { timeout: 10000 * waitScale }).catch(() => {});
  const why = await page.textContent('#chosen');
  check('a model nobody serves: the reason, with the models served',
        /no worker serves the model `nope` \(served: m, m2\)/.test(why || ''), why);
  // Fits 1280 px: neither the page nor any table is wider than its box.
  const widths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth,
    wide: Array.from(document.querySelectorAll('.tw, section')).filter((e) => e.scrollWidth > e.clientWidth + 1)
      .map((e) => (e.querySelector('table') || e).id + ':' + e.scrollWidth + '>' + e.clientWidth) }));
  check('the page fits 1280 px, no table scrolls sideways', widths.page <= 1280 && widths.wide.length === 0,
        JSON.stringify(widths));
  // PD mode: the counters of the pairs it made.
  const GP = `http://127.0.0.1:${gpd}`;
  check('PD gateway ready', await waitHttp(`${GP}/readiness`, 10000));
  let pairs = 0;
  for (let i = 0; i < 2; i++) {
    const r = await fetch(`${GP}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'pdm', prompt: 'the quick brown fox jumps over the lazy dog '.repeat(12) + i, max_tokens: 2 }) });
    pairs += r.status === 200;
    await r.arrayBuffer();
  }
  const pdPage = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  pdPage.on('pageerror', (e) => errors.push('pd page: ' + String(e)));
  pdPage.on('console', (m) => { if (m.type() === 'error') errors.push('pd page console: ' + m.text() + ' ' + m.location().url); });
  await pdPage.goto(`${GP}/ui`);
  const pdVal = (k) => { const d = document.querySelector(`#pd div[data-k="${k}"] b`); return d ? d.textContent : null; };
  await pdPage.waitForFunction(pdVal, 'prefill + decode pairs', { timeout: 10000 * waitScale }).catch(() => {});
  const pdShown = { pairs: await pdPage.evaluate(pdVal, 'prefill + decode pairs'),
                    p50: await pdPage.evaluate(pdVal, 'transfer p50'),
                    rejections: await pdPage.evaluate(pdVal, 'early rejections'),
                    mode: await pdPage.textContent('#pdmode') };
  check('PD mode: the pairs, transfer time and early rejections shown', pairs === 2 &&
        pdShown.pairs === '2' && / ms$/.test(pdShown.p50 || '') && pdShown.rejections === '0' && pdShown.mode === 'PD vllm',
        JSON.stringify({ pairs, pdShown }));
  check('... in a page that fits 1280 px', (await pdPage.evaluate(() => document.documentElement.scrollWidth)) <= 1280);
  const pdShot = path.join(tmp, 'ui-pd.png');
  await pdPage.screenshot({ path: pdShot, fullPage: true });
  console.log('# screenshot: ' + pdShot);
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
// The screenshots are for a reader of a failed run: kept then (and with
// KVG_UI_KEEP=1), removed after a passing one so that runs leave no folders.
const rc = summary();
if (rc === 0 && !process.env.KVG_UI_KEEP) fs.rmSync(tmp, { recursive: true, force: true });
process.exit(rc);
