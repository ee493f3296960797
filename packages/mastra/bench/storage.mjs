// TidemarkMastraStore on SQLite (strict: synchronous=FULL, every save on stable storage when it
// resolves) against Mastra's own @mastra/libsql on a local file, its default synchronous=NORMAL
// raised to FULL after init so that both promise the same durability. Three measures, each the
// median of BENCH_ROUNDS (default 15) calls on a fresh storage object over the same file (neither
// side keeps a cache between objects), and the ratio tidemark / libsql in the same run:
//   - save a 10-message turn to a thread that already holds BENCH_HISTORY messages (default 200);
//   - load the last 40 messages of a 2,000-message thread saved in 10-message turns (what Memory
//     reads before each turn: listMessages with perPage 40, newest first);
//   - list the threads of a resource with 5,000 threads (listThreads, first page of 100).
// Stores are filled with durability relaxed / synchronous=NORMAL, then reopened strict / FULL.
//
//   pnpm --filter @tidemark/mastra bench      (builds first)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LibSQLStore } from '@mastra/libsql';
import { openSqliteStore } from '@tidemark/sqlite';
import { TidemarkMastraStore } from '../dist/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const HISTORY = Number(process.env.BENCH_HISTORY ?? 200);
const LONG = 2_000;
const THREADS = 5_000;
const now = () => performance.now();
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const T0 = Date.parse('2026-01-01T00:00:00.000Z');

const thread = (id, resourceId) => ({
  id,
  resourceId,
  title: id,
  metadata: {},
  createdAt: new Date(T0),
  updatedAt: new Date(T0),
});
const message = (threadId, i) => ({
  id: `${threadId}-m${i}`,
  threadId,
  resourceId: 'user-1',
  role: i % 2 === 0 ? 'user' : 'assistant',
  type: 'text',
  createdAt: new Date(T0 + i),
  content: { format: 2, parts: [{ type: 'text', text: `message ${i} `.repeat(8) }], content: `message ${i}` },
});

/** The two sides: open(strict) gives a Mastra storage object and a close function. */
function sides(dir) {
  const sqlitePath = join(dir, 'tidemark.db');
  const libsqlUrl = `file:${join(dir, 'libsql.db')}`;
  return {
    tidemark: async (strict) => {
      const store = await openSqliteStore({ path: sqlitePath, durability: strict ? 'strict' : 'relaxed' });
      return { storage: new TidemarkMastraStore({ store }), close: () => store.close() };
    },
    libsql: async (strict) => {
      const storage = new LibSQLStore({ id: 'bench', url: libsqlUrl });
      await storage.init();
      await storage.pragmasReady;
      if (strict) {
        await storage.client.execute('PRAGMA synchronous=FULL;');
        const { rows } = await storage.client.execute('PRAGMA synchronous;');
        if (Number(Object.values(rows[0])[0]) !== 2) throw new Error('libsql: synchronous is not FULL');
      }
      return { storage, close: () => storage.close() };
    },
  };
}

async function fill(open) {
  const { storage, close } = await open(false);
  const memory = await storage.getStore('memory');
  await memory.saveThread({ thread: thread('turns', 'user-1') });
  for (let i = 0; i < HISTORY; i += 10)
    await memory.saveMessages({ messages: Array.from({ length: 10 }, (_, k) => message('turns', i + k)) });
  await memory.saveThread({ thread: thread('long', 'user-1') });
  for (let i = 0; i < LONG; i += 10)
    await memory.saveMessages({ messages: Array.from({ length: 10 }, (_, k) => message('long', i + k)) });
  for (let i = 0; i < THREADS; i++) await memory.saveThread({ thread: thread(`t-${i}`, 'many') });
  await close();
}

async function measure(open) {
  const out = { save: [], last40: [], list: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const { storage, close } = await open(true);
    const memory = await storage.getStore('memory');
    const turn = Array.from({ length: 10 }, (_, k) => message('turns', HISTORY + round * 10 + k));
    let t = now();
    await memory.saveMessages({ messages: turn });
    out.save.push(now() - t);
    t = now();
    const last = await memory.listMessages({
      threadId: 'long',
      perPage: 40,
      orderBy: { field: 'createdAt', direction: 'DESC' },
    });
    out.last40.push(now() - t);
    if (last.messages.length !== 40) throw new Error(`last 40: got ${last.messages.length}`);
    t = now();
    const page = await memory.listThreads({ filter: { resourceId: 'many' } });
    out.list.push(now() - t);
    if (page.total !== THREADS || page.threads.length !== 100)
      throw new Error(`list: ${page.total} / ${page.threads.length}`);
    await close();
  }
  return { save: median(out.save), last40: median(out.last40), list: median(out.list) };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-mastra-bench-'));
  try {
    const open = sides(dir);
    const t0 = now();
    await fill(open.tidemark);
    await fill(open.libsql);
    console.log(`filled both stores in ${((now() - t0) / 1000).toFixed(1)} s`);
    const results = { tidemark: await measure(open.tidemark), libsql: await measure(open.libsql) };
    const rows = [
      ['save a 10-message turn', 'save'],
      [`load the last 40 of ${LONG} messages`, 'last40'],
      [`list threads of a resource with ${THREADS}`, 'list'],
    ];
    console.log(
      `\nmedians of ${ROUNDS} rounds, SQLite strict (FULL) vs @mastra/libsql with synchronous=FULL`,
    );
    console.log('| measure | tidemark (ms) | @mastra/libsql (ms) | tidemark / libsql |');
    console.log('|---|---|---|---|');
    for (const [label, key] of rows) {
      const a = results.tidemark[key];
      const b = results.libsql[key];
      console.log(`| ${label} | ${a.toFixed(2)} | ${b.toFixed(2)} | ${(a / b).toFixed(2)} |`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
