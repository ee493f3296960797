// What a long Claude session costs per call, on SQLite and JSONL: a session of BENCH_ENTRIES
// entries (default 5,000) appended BENCH_BATCH at a time (default 2, as the SDK mirrors a turn),
// then, on the object that wrote it, an append of one more turn and a load (warm), and in a new
// process the first load (cold, after the store is open). Medians of BENCH_ROUNDS (default 5).
//
// Before issue 22 (quiet machine, 5,010 entries): SQLite append 5.1 ms, warm load 90 ms, cold load
// 163 ms; JSONL 11.9, 94 and 225 ms. With the cache confirmed by reads from the end of the log:
// SQLite 3.8, 13 and 157 ms; JSONL 9.3, 12 and 219 ms (a warm load reads only what is new).
//
//   pnpm --filter @tidemark/claude-agent-sdk bench      (builds first)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openJsonlStore } from '@tidemark/jsonl';
import { openSqliteStore } from '@tidemark/sqlite';
import { TidemarkSessionStore } from '../dist/index.js';

const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 5000);
const BATCH = Number(process.env.BENCH_BATCH ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const KEY = { projectKey: '/work/bench', sessionId: 'bench-session' };
const now = () => performance.now();
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const open = (backend, dir) =>
  backend === 'sqlite'
    ? openSqliteStore({ path: join(dir, 'sessions.db'), durability: 'relaxed' })
    : openJsonlStore({ root: dir, durability: 'relaxed' });
let n = 0;
const turn = () =>
  Array.from({ length: BATCH }, () => {
    n++;
    return { type: 'user', uuid: `uuid-${n}`, message: { role: 'user', content: `line ${n}` } };
  });

async function coldLoad(backend, dir) {
  const store = await open(backend, dir);
  const t = now();
  const entries = await new TidemarkSessionStore({ store }).load(KEY);
  const ms = now() - t;
  await store.close();
  process.stdout.write(JSON.stringify({ ms, entries: entries.length }));
}

async function measure(backend) {
  n = 0;
  const dir = mkdtempSync(join(tmpdir(), `tidemark-claude-bench-${backend}-`));
  try {
    const store = await open(backend, dir);
    const s = new TidemarkSessionStore({ store });
    while (n < ENTRIES) await s.append(KEY, turn());
    const appends = [];
    const loads = [];
    for (let i = 0; i < ROUNDS; i++) {
      let t = now();
      await s.append(KEY, turn());
      appends.push(now() - t);
      t = now();
      await s.load(KEY);
      loads.push(now() - t);
    }
    await store.close();
    const cold = Array.from({ length: ROUNDS }, () =>
      JSON.parse(
        execFileSync(process.execPath, [fileURLToPath(import.meta.url), 'cold', backend, dir], {
          encoding: 'utf8',
        }),
      ),
    );
    const ms = (xs) => `${median(xs).toFixed(2)} ms`;
    console.log(
      `${backend}: ${cold[0].entries} entries; warm append ${ms(appends)}, warm load ${ms(loads)}, cold load ${ms(cold.map((c) => c.ms))}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'cold') await coldLoad(process.argv[3], process.argv[4]);
else for (const backend of ['sqlite', 'jsonl']) await measure(backend);
