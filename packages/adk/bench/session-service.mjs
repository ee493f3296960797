// appendEvent, and a new process's first getSession({ numRecentEvents: 10 }) on a long session,
// on SQLite and JSONL. appendEvent is timed beside the store's own append of a batch of the same
// size (the floor: what the adapter adds is the read of the log's end and the event's encoding).
// Each cold call runs in its own child process: the store is opened (reported apart), then the
// call is timed, beside a cold getSession() that reads the whole session and the store's own first
// read of as many events from the log's end (the floor: most of it is the store's first look-up of
// the log, on JSONL through its catalog). Medians of BENCH_ROUNDS
// (default 7). The session holds BENCH_EVENTS events (default 2,000), a state delta on every
// fourth, written with durability 'relaxed' to build it quickly; the appendEvent timing uses strict.
//
//   pnpm --filter @tidemark/adk bench      (builds first)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEvent, createEventActions } from '@google/adk';
import { openJsonlStore } from '@tidemark/jsonl';
import { openSqliteStore } from '@tidemark/sqlite';
import { sessionLog, TidemarkSessionService } from '../dist/index.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 2_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const APPENDS = Number(process.env.BENCH_APPENDS ?? 200);
const KEY = { appName: 'bench', userId: 'u', sessionId: 'long' };
const now = () => performance.now();
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const ms = (x) => `${x.toFixed(2)} ms`;
const open = (backend, location, options = {}) =>
  backend === 'sqlite'
    ? openSqliteStore({ path: location, ...options })
    : openJsonlStore({ root: location, ...options });
const modelEvent = (i) =>
  createEvent({
    author: 'assistant',
    invocationId: `inv-${i >> 1}`,
    content: { role: 'model', parts: [{ text: `answer ${i}: ${'lorem ipsum '.repeat(8)}` }] },
    actions: createEventActions({ stateDelta: i % 4 === 0 ? { [`k${i % 16}`]: i, turn: i } : {} }),
  });

async function coldChild(backend, location, mode) {
  const t0 = now();
  const store = await open(backend, location);
  const t1 = now();
  let events = 0;
  if (mode === 'raw') {
    // The floor: the store's own first read of the log's end, as many events as the call reads.
    for await (const _event of store.read(sessionLog(KEY.appName, KEY.userId, KEY.sessionId).id, {
      last: 3 * 10 + 3,
    }))
      events++;
  } else {
    const service = new TidemarkSessionService({ store });
    const session = await service.getSession(
      mode === 'recent' ? { ...KEY, config: { numRecentEvents: 10 } } : KEY,
    );
    events = session.events.length;
  }
  const t2 = now();
  await store.close();
  process.stdout.write(JSON.stringify({ open: t1 - t0, get: t2 - t1, events }));
}

async function appendTimes(backend, location) {
  const store = await open(backend, location);
  const service = new TidemarkSessionService({ store });
  const session = await service.createSession({ ...KEY, sessionId: 'appends' });
  const adapter = [];
  for (let i = 0; i < APPENDS; i++) {
    const t = now();
    await service.appendEvent({ session, event: modelEvent(i) });
    adapter.push(now() - t);
  }
  // The floor: the store's own append of a batch as large as appendEvent's.
  const raw = [];
  const meta = await store.create();
  for (let i = 0; i < APPENDS; i++) {
    const time = new Date().toISOString();
    const data = JSON.parse(JSON.stringify(modelEvent(i)));
    const t = now();
    await store.append(meta.id, [
      { seq: 2 * i, type: 'adk/event', time, data: { event: data } },
      {
        seq: 2 * i + 1,
        type: 'turn/end',
        time,
        data: { lastUpdateTime: data.timestamp, snapshotSeq: 0, sinceSnapshot: 0, nonce: 'n' },
      },
    ]);
    raw.push(now() - t);
  }
  await store.close();
  return { adapter: median(adapter), raw: median(raw) };
}

async function main() {
  for (const backend of ['sqlite', 'jsonl']) {
    const dir = mkdtempSync(join(tmpdir(), `tidemark-adk-bench-${backend}-`));
    const location = backend === 'sqlite' ? join(dir, 'sessions.db') : dir;
    try {
      const appends = await appendTimes(backend, location);
      const store = await open(backend, location, { durability: 'relaxed' });
      const service = new TidemarkSessionService({ store });
      const session = await service.createSession(KEY);
      const t0 = now();
      for (let i = 0; i < EVENTS; i++) await service.appendEvent({ session, event: modelEvent(i) });
      const writeMs = now() - t0;
      await store.close();
      const cold = (mode) =>
        Array.from({ length: ROUNDS }, () =>
          JSON.parse(
            execFileSync(
              process.execPath,
              [fileURLToPath(import.meta.url), 'child', backend, location, mode],
              { encoding: 'utf8' },
            ),
          ),
        );
      const recent = cold('recent');
      const whole = cold('whole');
      const raw = cold('raw');
      const recentMs = median(recent.map((r) => r.get));
      const wholeMs = median(whole.map((r) => r.get));
      console.log(
        `${backend}: appendEvent ${ms(appends.adapter)} (store's own append of the same batch ${ms(appends.raw)}, ${(appends.adapter / appends.raw).toFixed(2)}x)`,
      );
      console.log(`${backend}: session of ${EVENTS} events written in ${(writeMs / 1000).toFixed(1)} s`);
      console.log(
        `${backend}: cold getSession(numRecentEvents: 10) ${ms(recentMs)} (open ${ms(median(recent.map((r) => r.open)))}), cold getSession() ${ms(wholeMs)}: ${(wholeMs / recentMs).toFixed(1)}x faster`,
      );
      console.log(
        `${backend}: the store's own cold read of the log's last 33 events ${ms(median(raw.map((r) => r.get)))}`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

if (process.argv[2] === 'child') await coldChild(process.argv[3], process.argv[4], process.argv[5]);
else await main();
