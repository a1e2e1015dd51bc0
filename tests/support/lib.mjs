// Shared helpers for the Node integration tests (imported, not run): the
// count of checks (passed, failed, skipped) with its closing line, free
// loopback ports, bounded waits, and processes started from the kvgate
// binary and stopped by PID.
import { spawn } from 'node:child_process';
import net from 'node:net';

export const counts = { passed: 0, failed: 0, skipped: 0 };

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

// Until url answers 200, for at most ms.
export async function waitHttp(url, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try { const r = await fetch(url); if (r.status === 200) return true; } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

const procs = [];
// The kvgate binary with args; stopped by stopAll.
export function start(args) {
  const p = spawn(process.env.KVG_BIN, args, { stdio: ['ignore', 'ignore', 'ignore'] });
  procs.push(p);
  return p;
}

export function stopAll() {
  for (const p of procs) { try { process.kill(p.pid, 'SIGTERM'); } catch {} }
}
