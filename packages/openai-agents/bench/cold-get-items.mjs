// A new process's first getItems(10) on a long session, on SQLite: what a serverless function or
// a freshly started worker pays before its first model call. The session holds BENCH_ITEMS items
// (default 10,000), written by addItems one turn (a user and an assistant item) at a time, with a
// pop every BENCH_POP_EVERY turns (default 50) so that the tail read meets truncates too.
// Each cold call runs in its own child process: the store is opened, then getItems(10) timed (the
// open is reported apart), beside the store's own first read of as many events (the floor) and a
// cold getItems() of everything. Medians of BENCH_ROUNDS (default 7); warm: the same object again.
// Before issue 22 a cold getItems(10) folded the whole log: a median of 92 ms on a quiet machine
// (352 ms under the load of other jobs); reading the end of the log, 3.6 ms (7.8 ms), of which the
// store's own first read is 2.2 ms (3.7 ms).
//
//   pnpm --filter @tidemark/openai-agents bench      (builds first)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSqliteStore } from '@tidemark/sqlite';
import { TidemarkSession } from '../dist/index.js';

const ITEMS = Number(process.env.BENCH_ITEMS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const POP_EVERY = Number(process.env.BENCH_POP_EVERY ?? 50);
const SESSION = 'bench-session';
const now = () => performance.now();
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const message = (role, text) =>
  role === 'user'
    ? { role, content: [{ type: 'input_text', text }] }
    : { role, status: 'completed', content: [{ type: 'output_text', text }] };

/** One cold call in this (new) process: `limit` -1 is getItems(), 'raw' the store's own read. */
async function coldChild(path, limit) {
  const t0 = now();
  const store = await openSqliteStore({ path });
  const t1 = now();
  if (limit === 'raw') {
    // The floor: the store's first read of as many events as getItems(10) reads.
    for await (const _event of store.read(SESSION, { last: 26 })) {
      // drain
    }
  } else {
    await new TidemarkSession({ store, sessionId: SESSION }).getItems(limit < 0 ? undefined : limit);
  }
  const t2 = now();
  await store.close();
  process.stdout.write(JSON.stringify({ open: t1 - t0, get: t2 - t1 }));
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-openai-bench-'));
  const path = join(dir, 'sessions.db');
  try {
    const store = await openSqliteStore({ path, durability: 'relaxed' });
    const session = new TidemarkSession({ store, sessionId: SESSION });
    const t0 = now();
    let turn = 0;
    for (let held = 0; held < ITEMS; ) {
      await session.addItems([message('user', `question ${turn}`), message('assistant', `answer ${turn}`)]);
      held += 2;
      if (++turn % POP_EVERY === 0) {
        await session.popItem();
        held--;
      }
    }
    const writeMs = now() - t0;
    const count = (await session.getItems()).length;
    const warm = [];
    for (let i = 0; i < 50; i++) {
      const t = now();
      await session.getItems(10);
      warm.push(now() - t);
    }
    await store.close();
    const cold = (limit) =>
      Array.from({ length: ROUNDS }, () =>
        JSON.parse(
          execFileSync(process.execPath, [fileURLToPath(import.meta.url), 'child', path, String(limit)], {
            encoding: 'utf8',
          }),
        ),
      );
    const cold10 = cold(10);
    const coldAll = cold(-1);
    const coldRaw = cold('raw');
    const ms = (x) => `${x.toFixed(2)} ms`;
    console.log(`session: ${count} items, ${turn} turns, written in ${(writeMs / 1000).toFixed(1)} s`);
    console.log(
      `cold getItems(10):  ${ms(median(cold10.map((r) => r.get)))} (open ${ms(median(cold10.map((r) => r.open)))})`,
    );
    console.log(`cold read of 26 events by the store alone: ${ms(median(coldRaw.map((r) => r.get)))}`);
    console.log(`cold getItems():    ${ms(median(coldAll.map((r) => r.get)))}`);
    console.log(`warm getItems(10):  ${ms(median(warm))}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'child') {
  await coldChild(process.argv[3], process.argv[4] === 'raw' ? 'raw' : Number(process.argv[4]));
} else {
  await main();
}
