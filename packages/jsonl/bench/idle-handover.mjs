// How soon another process can write a session whose writer went idle (lockIdleMs), and what taking
// the lock again costs the writer that released it.
//
//   node bench/idle-handover.mjs      (after `pnpm build`; BENCH_HANDOVER_ROUNDS, default 20)
//
// Two processes over one root: this one (B) and a child (A) that keeps its store open. Each round
// A appends, then B appends to the same session, retrying every 5 ms while A's lock is held
// (CONFLICT); B's wait is measured from the end of A's append (same host clock) to B's append
// landing. Then the other way round (A waits for B). Goal: every wait under 1000 ms.
// Second part, one process: an append that must take the lock again (the writer idled out) against
// one whose writer still holds it. Reported, not judged.
// Writes a table to stdout; exit status 1 if the goal fails.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { DEFAULT_LOCK_IDLE_MS, openJsonlStore } from '../dist/index.js';

const ROUNDS = Number(process.env.BENCH_HANDOVER_ROUNDS ?? 20);
const GOAL_MS = 1000;
const T = '2026-01-01T00:00:00.000Z';
const event = (seq, writer) => ({ seq, type: 'turn/end', time: T, data: { writer } });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Appends, retrying while another writer holds the lock; resolves the time it landed. */
async function appendWhenFree(store, id, events) {
  for (;;) {
    try {
      await store.append(id, events);
      return Date.now();
    } catch (error) {
      if (error?.code !== 'CONFLICT' || error.retryable !== true) throw error;
      await sleep(5);
    }
  }
}

if (process.argv[2] === '--child') {
  // A: one open store; each stdin line is a seq to append (retrying while locked); answers the
  // time the append landed.
  const store = await openJsonlStore({ root: process.argv[3] });
  process.stdout.write('ready\n');
  for await (const line of createInterface({ input: process.stdin })) {
    const seq = Number(line);
    if (seq === 0) await store.create({ id: 's' });
    const landed = await appendWhenFree(store, 's', [event(seq, 'a')]);
    process.stdout.write(`${landed}\n`);
  }
  process.exit(0);
}

const stats = (values) => {
  const sorted = [...values].sort((x, y) => x - y);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { median: at(0.5), p90: at(0.9), max: sorted[sorted.length - 1] };
};

async function handover(root) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child', root], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const pending = [];
  lines.on('line', (line) => pending.shift()?.(line));
  const next = () => new Promise((resolve) => pending.push(resolve));
  await next(); // ready
  const b = await openJsonlStore({ root });
  const bWaits = [];
  const aWaits = [];
  let seq = 0;
  let bLanded = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const reply = next();
    child.stdin.write(`${seq}\n`);
    const aLanded = Number(await reply);
    if (seq > 0) aWaits.push(aLanded - bLanded);
    seq++;
    bLanded = await appendWhenFree(b, 's', [event(seq, 'b')]);
    bWaits.push(bLanded - aLanded);
    seq++;
  }
  const loaded = await b.load('s');
  if (loaded.events.length !== seq) throw new Error(`expected ${seq} events, found ${loaded.events.length}`);
  await b.close();
  child.stdin.end();
  await new Promise((resolve) => child.on('exit', resolve));
  return { bWaits, aWaits };
}

async function reacquireCost(root) {
  const store = await openJsonlStore({ root });
  await store.create({ id: 'r' });
  await store.append('r', [event(0, 'r')]);
  const held = [];
  const retaken = [];
  let seq = 1;
  for (let round = 0; round < ROUNDS; round++) {
    let start = performance.now();
    await store.append('r', [event(seq++, 'r')]); // the writer holds its lock
    held.push(performance.now() - start);
    await sleep(DEFAULT_LOCK_IDLE_MS + 150); // idles out: lock released
    start = performance.now();
    await store.append('r', [event(seq++, 'r')]); // takes it again, checks the log's end
    retaken.push(performance.now() - start);
  }
  await store.close();
  return { held, retaken };
}

const root = mkdtempSync(join(tmpdir(), 'tidemark-handover-'));
try {
  const { bWaits, aWaits } = await handover(root);
  const { held, retaken } = await reacquireCost(root);
  const rows = [
    ['B waits for idle A (ms)', stats(bWaits)],
    ['A waits for idle B (ms)', stats(aWaits)],
    ['append, lock held (ms)', stats(held)],
    ['append, lock taken again (ms)', stats(retaken)],
  ];
  console.log(`lockIdleMs ${DEFAULT_LOCK_IDLE_MS}, ${ROUNDS} rounds`);
  console.log('| measure | median | p90 | max |\n| --- | --- | --- | --- |');
  for (const [name, s] of rows)
    console.log(`| ${name} | ${s.median.toFixed(1)} | ${s.p90.toFixed(1)} | ${s.max.toFixed(1)} |`);
  const worst = Math.max(...bWaits, ...aWaits);
  const ok = worst < GOAL_MS;
  console.log(`goal: every wait < ${GOAL_MS} ms: ${ok ? 'met' : 'FAILED'} (worst ${worst} ms)`);
  if (!ok) process.exitCode = 1;
} finally {
  rmSync(root, { recursive: true, force: true });
}
