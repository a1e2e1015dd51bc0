// Shared helpers for the Node integration tests (imported, not run): the
// count of checks (passed, failed, skipped) with its closing line, free
// loopback ports, bounded waits, and processes started from the kvgate
// binary and stopped by PID.
import { spawn } from 'node:child_process';
import net from 'node:net';

export const counts = { passed: 0, failed: 0, skipped: 0 };

// Waits (never assertions) scale with the build, as in tests/integration/lib.sh:
// KVG_WAIT_SCALE if set, else 4 when KVG_BUILD names an asan or fuzz build,
// else 1. Multiply a wait's bound (a start-up wait, a watchdog) by it.
function readWaitScale() {
  const env = process.env.KVG_WAIT_SCALE;
  if (env !== undefined && env !== '') {
    const k = Number(env);
    if (!(k > 0)) throw new Error(`KVG_WAIT_SCALE must be a positive number, not '${env}'`);
    return k;
  }
  return /asan|fuzz/.test(process.env.KVG_BUILD || '') ? 4 : 1;
}
export const waitScale = readWaitScale();

export function check(name, cond, extra = '') {
  if (cond) { counts.passed++; console.log('ok ' + name); }
  else { counts.failed++; console.log('FAIL ' + name + (extra ? ': ' + extra : '')); }
}

// A check whose precondition the machine lacks (a reference tool not
// installed): counted and printed, never a pass.
export function skip(name, reason) {
  counts.skipped++;
  console.log('skip ' + name + ': ' + reason);
}

export function summary() {
  console.log(`# ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
  return counts.failed ? 1 : 0;
}

export function freePort() {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
    s.on('error', rej);
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Until url answers 200, for at most ms times the wait scale.
export async function waitHttp(url, ms) {
  const end = Date.now() + ms * waitScale;
  while (Date.now() < end) {
    try { const r = await fetch(url); if (r.status === 200) return true; } catch {}
    await sleep(100);
  }
  return false;
}

// Until 127.0.0.1:port accepts a connection, for at most ms times the wait scale.
export async function waitPort(port, ms) {
  const end = Date.now() + ms * waitScale;
  while (Date.now() < end) {
    const up = await new Promise((r) => {
      const c = net.connect(port, '127.0.0.1', () => { c.end(); r(true); });
      c.on('error', () => r(false));
    });
    if (up) return true;
    await sleep(100);
  }
  return false;
}

const procs = [];
// Any program (cmd) with args; stopped by stopAll.
export function startCmd(cmd, args) {
  const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'ignore'] });
  procs.push(p);
  return p;
}
// The kvgate binary with args; stopped by stopAll.
export function start(args) {
  return startCmd(process.env.KVG_BIN, args);
}

export function stopAll() {
  for (const p of procs) { try { process.kill(p.pid, 'SIGTERM'); } catch {} }
}
