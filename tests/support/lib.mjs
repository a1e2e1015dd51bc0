// Shared helpers for the Node integration tests (imported, not run): the
// count of checks (passed, failed, skipped) with its closing line, free
// loopback ports, bounded waits, and processes started from the kvgate
// binary and stopped by PID.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
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

// A loopback port nobody listens on, by the rule of tests/fixtures/free_port.py
// and kvg_proc_free_port (src/base/proc.c): below the kernel's ephemeral range
// (a port from listen(0) lies in it, where any outgoing connection may take it
// before the test's server binds it), in this test's share of the range when
// tests/run.sh runs tests side by side, never one this process was given.
const givenPorts = new Set();
function portRange() {
  let lo0 = 32768;
  try {
    const v = parseInt(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0], 10);
    if (v >= 1024 && v <= 65535) lo0 = v;
  } catch {}
  let hi = lo0, lo = Math.max(1024, hi - 16384);
  if (hi - lo < 1024) { lo = 1024; hi = 65535; }
  const slot = parseInt(process.env.KVG_PORT_SLOT ?? '', 10), slots = parseInt(process.env.KVG_PORT_SLOTS ?? '', 10);
  if (slots > 1 && slots <= 16 && slot >= 0 && slot < slots) {
    const share = Math.floor((hi - lo) / slots);
    lo += share * slot;
    hi = lo + share;
  }
  return [lo, hi];
}
function bindable(port) {
  return new Promise((res) => {
    const s = net.createServer();
    s.once('error', () => res(false));
    s.listen(port, '127.0.0.1', () => s.close(() => res(true)));
  });
}
export async function freePort() {
  const [lo, hi] = portRange();
  for (let i = 0; i < 500; i++) {
    const p = lo + Math.floor(Math.random() * (hi - lo));
    if (givenPorts.has(p) || !(await bindable(p))) continue;
    givenPorts.add(p);
    return p;
  }
  throw new Error(`freePort: no free port in ${lo}-${hi}`);
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
