// OpenTelemetry traces (--otlp-endpoint, --trace-sample; docs/tracing.md)
// against a local OTLP/HTTP receiver that decodes every payload with the
// OpenTelemetry project's own protobuf code (@opentelemetry/otlp-transformer's
// generated root, built from the official opentelemetry-proto files).
// Engines are tests/fixtures/echo_engine.py: each answer carries the
// headers the engine received, and its log holds every leg's headers.
//   1. a gateway with --trace-sample 0.25: a client's sampled traceparent is
//      continued (trace id, parent), the children (parse, auth,
//      quota_admission, route, the upstream leg) hang under the server span,
//      the engine gets the leg's span as its parent, GenAI attributes are
//      set, no prompt text is anywhere in the payload; a client's unsampled
//      traceparent records nothing and tells the engine so; a hostile
//      traceparent starts a new trace; requests without one are sampled
//      within binomial bounds of 0.25;
//   2. PD gateways: vLLM's two hops, prefill and decode legs as spans, each
//      engine given its own leg's span id; SGLang's bootstrap (two sims),
//      both legs at once under one server span;
//   3. a collector port with nothing listening and 4. one that accepts and
//      never answers: every request succeeds, and the dropped spans are
//      counted in kvgate_trace_spans_dropped_total.
// The five gateways start side by side; spans are batched every 100 ms.
import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { check, freePort, skip, sleep, start, startCmd, stopAll, summary, waitHttp, waitScale }
  from '../support/lib.mjs';

const require = createRequire(process.env.KVG_ROOT + '/tests/node/');
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root');
const Req = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

const timer = setTimeout(() => { console.log('FAIL timeout'); stopAll(); process.exit(1); },
                         60000 * waitScale);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kvg-trace-'));
const servers = [];
const js = (o) => JSON.stringify(o, (k, v) => (typeof v === 'bigint' ? String(v) : v));
const hex = (b) => Buffer.from(b || []).toString('hex');

// The receiver: every span decoded, with its resource's attributes.
const spans = [];
const payloads = [];
let contentTypes = new Set(), decodeErrors = 0;
function attrs(list) {
  const o = {};
  for (const kv of list || []) {
    const v = kv.value || {};
    o[kv.key] = v.stringValue ?? (v.intValue != null ? Number(v.intValue) : undefined) ??
                v.doubleValue ?? v.boolValue;
  }
  return o;
}
async function receiver() {
  const port = await freePort();
  const srv = http.createServer((req, res) => {
    const parts = [];
    req.on('data', (c) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      contentTypes.add(`${req.method} ${req.url} ${req.headers['content-type']}`);
      payloads.push(body);
      try {
        const m = Req.decode(body);
        for (const rs of m.resourceSpans) {
          const resource = attrs(rs.resource?.attributes);
          for (const ss of rs.scopeSpans)
            for (const s of ss.spans)
              spans.push({ traceId: hex(s.traceId), spanId: hex(s.spanId),
                           parentId: hex(s.parentSpanId), name: s.name, kind: s.kind,
                           start: BigInt(s.startTimeUnixNano.toString()),
                           end: BigInt(s.endTimeUnixNano.toString()),
                           attrs: attrs(s.attributes), events: s.events.map((e) => e.name),
                           status: s.status?.code ?? 0, resource, scope: ss.scope?.name });
        }
      } catch (e) { decodeErrors++; }
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end(); // an empty ExportTraceServiceResponse: all accepted
    });
  });
  await new Promise((r) => srv.listen(port, '127.0.0.1', r));
  servers.push(srv);
  return port;
}

// A collector that accepts connections and never answers.
async function hungCollector() {
  const port = await freePort();
  const socks = [];
  const srv = net.createServer((s) => { socks.push(s); s.on('error', () => {}); });
  await new Promise((r) => srv.listen(port, '127.0.0.1', r));
  servers.push({ close: () => { for (const s of socks) s.destroy(); srv.close(); } });
  return port;
}

async function echo(name) {
  const port = await freePort();
  const log = path.join(tmp, `${name}.log`);
  startCmd('/usr/bin/python3', [process.env.KVG_ROOT + '/tests/fixtures/echo_engine.py',
                                String(port), 'm', '-', log]);
  return { port, log, url: `http://127.0.0.1:${port}` };
}
const logged = (e) => fs.existsSync(e.log) ?
  fs.readFileSync(e.log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];

async function gateway(args) {
  const port = await freePort();
  start(['serve', '--port', String(port), '--threads', '1', '--disable-health-check',
         '--load-monitor-interval-ms', '0', ...args]);
  const ok = await waitHttp(`http://127.0.0.1:${port}/readiness`, 10000);
  return { port, ok, url: `http://127.0.0.1:${port}` };
}

async function chat(gw, content, headers = {}) {
  const r = await fetch(gw.url + '/v1/chat/completions', {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }], max_tokens: 4 }),
  });
  const text = await r.text();
  let j = null;
  try { j = JSON.parse(text); } catch {}
  return { status: r.status, j };
}

// Until pred() holds, for at most ms (times the wait scale).
async function until(pred, ms) {
  const end = Date.now() + ms * waitScale;
  while (Date.now() < end) { if (pred()) return true; await sleep(100); }
  return pred();
}

async function metric(gw, re) {
  const t = await (await fetch(gw.url + '/metrics')).text();
  const m = t.match(re);
  return m ? Number(m[1]) : 0;
}

const rndHex = (n) => [...crypto.getRandomValues(new Uint8Array(n))]
  .map((b) => b.toString(16).padStart(2, '0')).join('');

try {
  const rport = await receiver();
  const e1 = await echo('e1'), ep = await echo('prefill'), ed = await echo('decode');
  for (const e of [e1, ep, ed]) await waitHttp(`${e.url}/v1/models`, 10000);
  // Batches every 100 ms: the waits below are a few of those.
  const otlp = ['--otlp-endpoint', `http://127.0.0.1:${rport}/`, '--trace-flush-ms', '100'];
  const dead = await freePort();
  const hung = await hungCollector();
  // SGLang's bootstrap PD over two sims: both legs at once.
  const [sp, spb, sd] = [await freePort(), await freePort(), await freePort()];
  start(['sim', '--port', String(sp), '--flavor', 'sglang', '--role', 'prefill',
         '--bootstrap-port', String(spb)]);
  start(['sim', '--port', String(sd), '--flavor', 'sglang', '--role', 'decode',
         '--bootstrap-timeout-secs', '1']);
  for (const p of [sp, sd]) await waitHttp(`http://127.0.0.1:${p}/v1/models`, 10000);
  const [g1, g2, g3, g4, g5] = await Promise.all([
    gateway(['--worker-urls', e1.url, ...otlp, '--trace-sample', '0.25']),
    gateway(['--vllm-pd-disaggregation', '--prefill', ep.url, 'none', '--decode', ed.url,
             '--pd-threshold-tokens', '1', ...otlp]),
    gateway(['--worker-urls', e1.url, '--otlp-endpoint', `http://127.0.0.1:${dead}`,
             '--trace-sample', '1', '--trace-flush-ms', '100']),
    gateway(['--worker-urls', e1.url, '--otlp-endpoint', `http://127.0.0.1:${hung}`,
             '--trace-sample', '1', '--trace-flush-ms', '100', '--otlp-timeout-secs', '1']),
    gateway(['--pd-disaggregation', '--prefill', `http://127.0.0.1:${sp}`, String(spb),
             '--decode', `http://127.0.0.1:${sd}`, ...otlp]),
  ]);

  // ---- 1. The aggregated gateway.
  check('gateway with --otlp-endpoint ready', g1.ok);
  const SECRET = 'zebra-prompt-' + rndHex(6);
  const tid = rndHex(16), psid = rndHex(8);
  const traced = await chat(g1, SECRET, { traceparent: `00-${tid}-${psid}-01` });
  check('traced request answered', traced.status === 200, JSON.stringify(traced));
  const engineTp = traced.j?.headers?.traceparent || '';
  await until(() => spans.filter((s) => s.traceId === tid).length >= 6, 5000);
  const mine = spans.filter((s) => s.traceId === tid);
  const server = mine.find((s) => s.kind === 2);
  check('spans arrive as OTLP protobuf at /v1/traces',
        [...contentTypes].some((c) => c === 'POST /v1/traces application/x-protobuf') &&
        decodeErrors === 0, [...contentTypes].join(',') + ` errors=${decodeErrors}`);
  check('server span continues the client\'s trace',
        server && server.parentId === psid && server.name === 'POST /v1/chat/completions',
        js(server));
  const names = mine.filter((s) => s !== server).map((s) => s.name).sort();
  for (const n of ['parse', 'tokenize', 'auth', 'quota_admission', 'route', 'chat m'])
    check(`child span ${n}`, names.includes(n), names.join(','));
  check('children hang under the server span',
        server && mine.every((s) => s === server || s.parentId === server.spanId));
  check('children lie within the server span',
        server && mine.every((s) => s.start >= server.start && s.end <= server.end + 1000000n));
  const leg = mine.find((s) => s.name === 'chat m');
  check('the engine got the leg\'s traceparent',
        leg && engineTp === `00-${tid}-${leg.spanId}-01`, `${engineTp} leg=${leg?.spanId}`);
  check('leg: a client span with server.address, port, status',
        leg && leg.kind === 3 && leg.attrs['server.address'] === '127.0.0.1' &&
        leg.attrs['server.port'] === e1.port && leg.attrs['http.response.status_code'] === 200 &&
        leg.attrs['kvgate.leg'] === 'upstream', JSON.stringify(leg?.attrs));
  check('server span: GenAI and HTTP attributes',
        server && server.attrs['gen_ai.request.model'] === 'm' &&
        server.attrs['gen_ai.operation.name'] === 'chat' &&
        server.attrs['gen_ai.request.max_tokens'] === 4 &&
        server.attrs['http.response.status_code'] === 200 &&
        server.events.includes('first_token'), JSON.stringify(server?.attrs));
  const route = mine.find((s) => s.name === 'route');
  check('route span: worker and routing mode',
        route && route.attrs['kvgate.worker'] === e1.url &&
        typeof route.attrs['kvgate.route.matched_blocks'] === 'number' &&
        typeof route.attrs['kvgate.routing.mode'] === 'string', JSON.stringify(route?.attrs));
  check('resource: service.name kvgate', server && server.resource['service.name'] === 'kvgate' &&
        server.scope === 'kvgate');

  // A big body (parsed on the work threads) makes the same tree.
  const tidb = rndHex(16);
  const big = await chat(g1, SECRET + ' ' + 'x'.repeat(20000), { traceparent: `00-${tidb}-${rndHex(8)}-01` });
  await until(() => spans.filter((s) => s.traceId === tidb).length >= 6, 5000);
  const bigNames = spans.filter((s) => s.traceId === tidb).map((s) => s.name).sort().join(',');
  check('big body: the same spans, parse and tokenize off the loop', big.status === 200 &&
        bigNames === 'POST /v1/chat/completions,auth,chat m,parse,quota_admission,route,tokenize', bigNames);

  // A client's unsampled traceparent: nothing recorded, the engine told so.
  const tid0 = rndHex(16);
  const un = await chat(g1, SECRET + '-unsampled', { traceparent: `00-${tid0}-${rndHex(8)}-00` });
  check('unsampled traceparent: engine gets flag 00 in the same trace',
        un.status === 200 && new RegExp(`^00-${tid0}-[0-9a-f]{16}-00$`).test(un.j?.headers?.traceparent || ''),
        un.j?.headers?.traceparent);
  // Hostile values: the request goes on as if none were sent.
  const bad = ['00-' + '0'.repeat(32) + '-' + rndHex(8) + '-01', 'ff-' + rndHex(16) + '-' + rndHex(8) + '-01',
               '00-' + rndHex(16).toUpperCase() + '-' + rndHex(8) + '-01', 'x'.repeat(300),
               '00-' + rndHex(16) + '-' + rndHex(8) + '-01-extra'];
  let badOk = 0;
  for (const tp of bad) {
    const r = await chat(g1, SECRET + '-hostile', { traceparent: tp });
    const sent = r.j?.headers?.traceparent || '';
    if (r.status === 200 && /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/.test(sent) && !sent.includes(tp.slice(3, 35)))
      badOk++;
  }
  check('hostile traceparents: answered, a new trace sent on', badOk === bad.length, `${badOk}/${bad.length}`);

  // The ratio: requests without a traceparent (their server spans are roots).
  const before = spans.filter((s) => s.kind === 2 && !s.parentId).length;
  const N = 160;
  let okN = 0;
  for (let i = 0; i < N; i += 8) {
    const rs = await Promise.all(Array.from({ length: 8 }, () => chat(g1, SECRET + '-ratio')));
    okN += rs.filter((r) => r.status === 200).length;
  }
  check('ratio requests answered', okN === N, `${okN}/${N}`);
  // Binomial(160, 0.25): mean 40, sd 5.5; +-5 sd.
  // Each span was queued before its answer was sent: a few flushes bring them all.
  await until(() => spans.filter((s) => s.kind === 2 && !s.parentId).length - before >= 13, 4000);
  await sleep(500);
  const roots = spans.filter((s) => s.kind === 2 && !s.parentId).length - before;
  check('--trace-sample 0.25 honoured (binomial bounds)', roots >= 13 && roots <= 67, `${roots}/${N}`);
  check('no span of the unsampled trace', !spans.some((s) => s.traceId === tid0));
  check('exported spans counted', await metric(g1, /^kvgate_trace_spans_exported_total (\S+)/m) >= mine.length);
  // The trace series as Prometheus' own linter reads them.
  const text = await (await fetch(g1.url + '/metrics')).text();
  const lint = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if (lint.error) skip('promtool clean with the trace series', 'promtool is not installed');
  else check('promtool clean with the trace series', lint.status === 0 &&
             text.includes('kvgate_trace_spans_dropped_total{reason="queue_full"}'),
             lint.stdout + lint.stderr);

  // ---- 2. PD: a prefill and a decode leg.
  check('PD gateway ready', g2.ok);
  const tid2 = rndHex(16);
  const pd = await chat(g2, SECRET + ' a longer prompt for the prefill leg', { traceparent: `00-${tid2}-${rndHex(8)}-01` });
  check('PD request answered', pd.status === 200, JSON.stringify(pd));
  await until(() => spans.filter((s) => s.traceId === tid2 && s.kind === 3).length >= 2, 5000);
  const pdSpans = spans.filter((s) => s.traceId === tid2);
  const pserver = pdSpans.find((s) => s.kind === 2);
  const pleg = pdSpans.find((s) => s.attrs['kvgate.leg'] === 'prefill');
  const dleg = pdSpans.find((s) => s.attrs['kvgate.leg'] === 'decode');
  check('PD: prefill and decode leg spans under the server span',
        pserver && pleg && dleg && pleg.parentId === pserver.spanId && dleg.parentId === pserver.spanId &&
        pleg.attrs['server.port'] === ep.port && dleg.attrs['server.port'] === ed.port,
        pdSpans.map((s) => `${s.name}/${s.attrs['kvgate.leg']}`).join(','));
  const ptp = logged(ep).map((r) => r.headers.traceparent).find((t) => t && t.includes(tid2));
  const dtp = logged(ed).map((r) => r.headers.traceparent).find((t) => t && t.includes(tid2));
  check('PD: each engine got its own leg\'s span as parent',
        pleg && dleg && ptp === `00-${tid2}-${pleg.spanId}-01` && dtp === `00-${tid2}-${dleg.spanId}-01`,
        `${ptp} ${dtp}`);
  const proute = pdSpans.find((s) => s.name === 'route');
  check('PD: route span names the decision', proute && proute.attrs['kvgate.pd.decision'] === 'prefill_decode',
        JSON.stringify(proute?.attrs));

  // SGLang: the prefill leg runs beside the decode's stream.
  check('SGLang PD gateway ready', g5.ok);
  const tid5 = rndHex(16);
  const sr = await fetch(g5.url + '/v1/completions', {
    method: 'POST', headers: { 'content-type': 'application/json', traceparent: `00-${tid5}-${rndHex(8)}-01` },
    body: JSON.stringify({ model: 'sim-model', prompt: SECRET + ' the bootstrap leg', max_tokens: 4,
                           ignore_eos: true, stream: true }),
  });
  const stext = await sr.text();
  check('SGLang PD stream answered', sr.status === 200 && stext.includes('[DONE]'), stext.slice(0, 200));
  await until(() => spans.filter((s) => s.traceId === tid5 && s.kind === 3).length >= 2 &&
                    spans.some((s) => s.traceId === tid5 && s.kind === 2), 5000);
  const s5 = spans.filter((s) => s.traceId === tid5);
  const sserver = s5.find((s) => s.kind === 2);
  const legs5 = s5.filter((s) => s.kind === 3).map((s) => `${s.attrs['kvgate.leg']}:${s.attrs['server.port']}`).sort();
  check('SGLang PD: prefill and decode legs under the server span',
        sserver && legs5.join(',') === `decode:${sd},prefill:${sp}` &&
        s5.every((s) => s === sserver || s.parentId === sserver.spanId) &&
        sserver.events.includes('first_token') && sserver.attrs['gen_ai.operation.name'] === 'text_completion',
        legs5.join(',') + ' ' + js(sserver?.attrs));

  // Every prompt sent holds SECRET.
  const all = Buffer.concat(payloads).toString('latin1');
  check('no prompt text in any payload', payloads.length > 0 && !all.includes(SECRET));

  // ---- 3 and 4. Dead collectors cost requests nothing; drops are counted.
  check('gateways with dead collectors ready', g3.ok && g4.ok);
  await Promise.all([['nothing listening', g3], ['never answering', g4]].map(async ([name, g]) => {
    let ok = 0;
    for (let i = 0; i < 40; i += 8) {
      const rs = await Promise.all(Array.from({ length: 8 }, () => chat(g, 'dead collector')));
      ok += rs.filter((r) => r.status === 200).length;
    }
    check(`collector ${name}: every request answered`, ok === 40, `${ok}/40`);
    const re = /^kvgate_trace_spans_dropped_total\{reason="export_failed"\} (\S+)/m;
    let dropped = 0;
    const end = Date.now() + 8000 * waitScale;
    while (Date.now() < end && (dropped = await metric(g, re)) === 0) await sleep(100);
    check(`collector ${name}: dropped spans counted`, dropped > 0, `dropped=${dropped}`);
  }));
} catch (e) {
  check('no exception', false, e.stack);
}
clearTimeout(timer);
stopAll();
for (const s of servers) s.close();
fs.rmSync(tmp, { recursive: true, force: true });
process.exit(summary());
