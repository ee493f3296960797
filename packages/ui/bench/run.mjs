// Bench: the first list page and a 10,000-event session view, served at 100,000 sessions and at
// 1,000 sessions from a SQLite store (keyset list pages), as medians and their ratio (goal ≤ 1.5×).
// Run after a build: `pnpm --filter @tidemark/ui bench`. Seeding 100,000 sessions takes a while.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openSqliteStore } from '@tidemark/sqlite';
import { startSessionBrowser } from '../dist/index.js';

const SIZES = [1000, Number(process.env.TIDEMARK_UI_BENCH_SESSIONS ?? 100_000)];
const BIG_EVENTS = 10_000;
const LIST_RUNS = 30;
const VIEW_RUNS = 15;
const GOAL = 1.5;

function get(url) {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let bytes = 0;
      res.on('data', (chunk) => {
        bytes += chunk.length;
      });
      res.on('end', () =>
        res.statusCode === 200 ? resolve(bytes) : reject(new Error(`${url}: ${res.statusCode}`)),
      );
    })
      .on('error', reject)
      .end();
  });
}

function bigSession() {
  const events = [];
  const time = new Date().toISOString();
  for (let seq = 0; seq < BIG_EVENTS; seq++) {
    const kind = seq % 5;
    const type = ['turn/start', 'user/message', 'tool/call', 'tool/result', 'turn/end'][kind];
    const data =
      kind === 2
        ? { callId: `c${seq}`, name: 'bash', input: { command: 'ls' } }
        : kind === 3
          ? { callId: `c${seq - 1}`, output: 'a.txt b.txt' }
          : { text: `event ${seq}` };
    events.push({ seq, type, time, data });
  }
  return events;
}

async function seed(store, count) {
  await store.create({ id: 'big', title: 'the big one', cwd: '/bench' });
  for (let from = 0; from < BIG_EVENTS; from += 1000)
    await store.append('big', bigSession().slice(from, from + 1000));
  const time = new Date().toISOString();
  const one = async (i) => {
    const id = `s${String(i).padStart(6, '0')}`;
    await store.create({ id, title: `session ${i}`, cwd: `/bench/${i % 50}`, tags: [`t${i % 7}`] });
    await store.append(id, [
      { seq: 0, type: 'user/message', time, data: { text: `prompt ${i}` } },
      { seq: 1, type: 'turn/end', time, data: {} },
    ]);
  };
  // A few sessions at a time: each id is locked separately, so the appends overlap their waits.
  for (let i = 1; i < count; i += 32) {
    const batch = [];
    for (let j = i; j < Math.min(count, i + 32); j++) batch.push(one(j));
    await Promise.all(batch);
  }
}

/** A seeded store served by a browser, with the big session's updatedAt as the list links it. */
async function setUp(count) {
  // Memory-backed /dev/shm where there is one: the bench measures serving, not the disk.
  const dir = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'tidemark-ui-bench-'));
  const store = await openSqliteStore({ path: join(dir, 'store.db'), durability: 'relaxed' });
  const seedStart = performance.now();
  await seed(store, count);
  const seedSeconds = (performance.now() - seedStart) / 1000;
  let at;
  for await (const page of pages(store)) {
    const big = page.find((s) => s.id === 'big');
    if (big !== undefined) {
      at = big.updatedAt;
      break;
    }
  }
  const browser = await startSessionBrowser({ store, port: 0 });
  const first = JSON.parse(await getBody(`${browser.url}api/sessions`));
  if (first.sessions.length === 0) throw new Error('empty list');
  const tearDown = async () => {
    await browser.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  };
  return {
    count,
    seedSeconds,
    tearDown,
    listUrl: `${browser.url}api/sessions`,
    viewUrl: `${browser.url}api/session/big?at=${encodeURIComponent(at)}`,
  };
}

/**
 * Medians of `runs` requests to each URL, the two sizes taking turns request by request, so that
 * load from other work on the machine falls on both alike.
 */
async function interleaved(runs, urlA, urlB) {
  await get(urlA);
  await get(urlB);
  const times = [[], []];
  for (let i = 0; i < runs; i++) {
    // Alternating which goes first, so that neither always follows the other's garbage.
    const order = i % 2 === 0 ? [0, 1] : [1, 0];
    for (const k of order) {
      const url = k === 0 ? urlA : urlB;
      const start = performance.now();
      await get(url);
      times[k].push(performance.now() - start);
    }
  }
  return times.map((list) => list.sort((a, b) => a - b)[Math.floor(list.length / 2)]);
}

async function* pages(store) {
  let cursor;
  do {
    const page = await store.list({ limit: 1000, ...(cursor !== undefined && { cursor }) });
    yield page.sessions;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
}

function getBody(url) {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve(body));
    })
      .on('error', reject)
      .end();
  });
}

const small = await setUp(SIZES[0]);
const large = await setUp(SIZES[1]);
const [listSmall, listLarge] = await interleaved(LIST_RUNS, small.listUrl, large.listUrl);
const [viewSmall, viewLarge] = await interleaved(VIEW_RUNS, small.viewUrl, large.viewUrl);
await small.tearDown();
await large.tearDown();
const rows = [
  ['first list page', listSmall, listLarge],
  [`${BIG_EVENTS}-event session view`, viewSmall, viewLarge],
];
console.log(
  `seeded ${small.count} sessions in ${small.seedSeconds.toFixed(1)} s, ${large.count} in ${large.seedSeconds.toFixed(1)} s (sqlite, relaxed)`,
);
console.log(`| request | median at ${small.count} | median at ${large.count} | ratio |`);
console.log('| --- | --- | --- | --- |');
let ok = true;
for (const [name, a, b] of rows) {
  const ratio = b / a;
  ok &&= ratio <= GOAL;
  console.log(`| ${name} | ${a.toFixed(2)} ms | ${b.toFixed(2)} ms | ${ratio.toFixed(2)}× |`);
}
console.log(ok ? `within the goal of ${GOAL}×` : `OVER the goal of ${GOAL}×`);
process.exitCode = ok ? 0 : 1;
