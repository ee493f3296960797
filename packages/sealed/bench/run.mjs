// Sealed against unsealed, in the same run on the same disk, in interleaved rounds, medians:
// durable (strict) 1-event appends and the load of a 10,000-event session, on JSONL and SQLite.
//
//   pnpm --filter @tidemark/sealed bench
//
// Goals: sealed append throughput ≥ 0.9× unsealed; sealed load time ≤ 1.3× unsealed.
// Sizes (environment): BENCH_APPENDS (300 appends per round), BENCH_LOAD_EVENTS (10000),
// BENCH_ROUNDS (7), BENCH_LOAD_BATCH (500 events a batch in the loaded session: a batch sealed as
// one costs one AES-GCM operation on load, see README). Writes bench-results/sealed.json; exit status 1 when a goal fails.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openJsonlStore } from '@tidemark/jsonl';
import { openSqliteStore } from '@tidemark/sqlite';
import { Keyring, sealStore } from '../dist/index.js';

const size = (name, fallback) => Number(process.env[name] ?? fallback);
const APPENDS = size('BENCH_APPENDS', 300);
const LOAD_EVENTS = size('BENCH_LOAD_EVENTS', 10_000);
const LOAD_BATCH = size('BENCH_LOAD_BATCH', 500);
const ROUNDS = size('BENCH_ROUNDS', 7);
const here = dirname(fileURLToPath(import.meta.url));
const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'tidemark-sealed-bench-'));
const keys = Keyring.from({ current: 'bench', keys: { bench: Keyring.generateKey() } });
const TIME = '2026-01-01T00:00:00.000Z';
let dirs = 0;

const data = (seq) => ({
  role: 'assistant',
  text: `step ${seq} of the agent, with some words of output`,
  tokens: seq % 97,
});
const event = (seq) => ({
  seq,
  type: seq % 10 === 9 ? 'turn/end' : 'tool/result',
  time: TIME,
  data: data(seq),
});

const backends = {
  jsonl: () => openJsonlStore({ root: join(work, `j${dirs++}`) }),
  sqlite: () => {
    const dir = join(work, `s${dirs++}`);
    mkdirSync(dir);
    return openSqliteStore({ path: join(dir, 'db.sqlite') });
  },
};
const open = async (backend, sealed) => {
  const inner = await backends[backend]();
  return sealed ? sealStore(inner, { keys }) : inner;
};

/** Appends per second of APPENDS durable one-event appends to a fresh session. */
async function appendRate(backend, sealed) {
  const store = await open(backend, sealed);
  await store.create({ id: 'a' });
  const start = performance.now();
  for (let seq = 0; seq < APPENDS; seq++) await store.append('a', [event(seq)]);
  const ms = performance.now() - start;
  await store.close();
  return (APPENDS / ms) * 1000;
}

/** A store holding one LOAD_EVENTS-event session, written in batches of LOAD_BATCH. */
async function loadFixture(backend, sealed) {
  const store = await open(backend, sealed);
  await store.create({ id: 'l' });
  for (let seq = 0; seq < LOAD_EVENTS; seq += LOAD_BATCH) {
    const batch = [];
    for (let i = seq; i < Math.min(seq + LOAD_BATCH, LOAD_EVENTS); i++) batch.push(event(i));
    await store.append('l', batch);
  }
  return store;
}

async function loadMs(store) {
  const start = performance.now();
  const loaded = await store.load('l');
  const ms = performance.now() - start;
  if (loaded.events.length !== LOAD_EVENTS) throw new Error('short load');
  return ms;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = [];
for (const backend of Object.keys(backends)) {
  const rates = { plain: [], sealed: [] };
  const loads = { plain: [], sealed: [] };
  const fixtures = { plain: await loadFixture(backend, false), sealed: await loadFixture(backend, true) };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? ['plain', 'sealed'] : ['sealed', 'plain'];
    for (const kind of order) rates[kind].push(await appendRate(backend, kind === 'sealed'));
    for (const kind of order) loads[kind].push(await loadMs(fixtures[kind]));
  }
  await fixtures.plain.close();
  await fixtures.sealed.close();
  const rate = { plain: median(rates.plain), sealed: median(rates.sealed) };
  const load = { plain: median(loads.plain), sealed: median(loads.sealed) };
  results.push({
    name: 'durable 1-event append (appends/s)',
    store: backend,
    unsealed: Math.round(rate.plain),
    sealed: Math.round(rate.sealed),
    ratio: Number((rate.sealed / rate.plain).toFixed(3)),
    goal: 0.9,
    better: 'higher',
  });
  results.push({
    name: `load of ${LOAD_EVENTS} events (ms)`,
    store: backend,
    unsealed: Number(load.plain.toFixed(1)),
    sealed: Number(load.sealed.toFixed(1)),
    ratio: Number((load.sealed / load.plain).toFixed(3)),
    goal: 1.3,
    better: 'lower',
  });
}
rmSync(work, { recursive: true, force: true });

for (const r of results) r.pass = r.better === 'higher' ? r.ratio >= r.goal : r.ratio <= r.goal;
console.table(
  results.map((r) => ({
    benchmark: r.name,
    store: r.store,
    unsealed: r.unsealed,
    sealed: r.sealed,
    ratio: r.ratio,
    goal: `${r.better === 'higher' ? '≥' : '≤'} ${r.goal}`,
    result: r.pass ? 'pass' : 'FAIL',
  })),
);
const out = join(here, '..', 'bench-results', 'sealed.json');
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify({ when: new Date().toISOString(), node: process.version, sizes: { APPENDS, LOAD_EVENTS, ROUNDS }, results }, null, 2)}\n`,
);
console.log(`wrote ${out}`);
process.exitCode = results.every((r) => r.pass) ? 0 : 1;
