// Bench of the write path (SessionWriter) over the real JSONL and SQLite backends, strict
// durability. Reports ratios against baselines measured in the same run, never absolute goals:
//   per-event  — one awaited append per event (what an agent does without a writer)
//   raw-batch  — the same events appended directly in batches of 256 (the best a caller can do)
//   writer     — push() every event, then flush(): group commit by count/bytes/delay
// Run: pnpm --filter @tidemark/cli bench   (after pnpm build)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SessionWriter } from '@tidemark/core';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000);
const PER_EVENT = Math.min(EVENTS, Number(process.env.BENCH_PER_EVENT ?? 300));
const T = new Date().toISOString();
const event = (seq) => ({
  seq,
  type: 'tool/result',
  time: T,
  data: { callId: `c${seq}`, output: 'x'.repeat(180) },
});

async function backends(dir) {
  const out = [];
  try {
    const { openJsonlStore } = await import('@tidemark/jsonl');
    out.push(['jsonl', () => openJsonlStore({ root: join(dir, 'jsonl') })]);
  } catch (error) {
    console.error(`jsonl not available: ${error.message.split('\n')[0]}`);
  }
  try {
    const { openSqliteStore } = await import('@tidemark/sqlite');
    out.push(['sqlite', () => openSqliteStore({ path: join(dir, 's.db') })]);
  } catch (error) {
    console.error(`sqlite not available: ${error.message.split('\n')[0]}`);
  }
  return out;
}

async function timed(fn) {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

const dir = mkdtempSync(join(tmpdir(), 'tidemark-bench-'));
try {
  const rows = [];
  for (const [name, open] of await backends(dir)) {
    const store = await open();
    let n = 0;
    const fresh = async () => {
      const id = `b${n++}`;
      await store.create({ id });
      return id;
    };
    const perEventId = await fresh();
    const perEvent = await timed(async () => {
      for (let seq = 0; seq < PER_EVENT; seq++) await store.append(perEventId, [event(seq)]);
    });
    const rawId = await fresh();
    const raw = await timed(async () => {
      for (let seq = 0; seq < EVENTS; seq += 256) {
        await store.append(
          rawId,
          Array.from({ length: Math.min(256, EVENTS - seq) }, (_, i) => event(seq + i)),
        );
      }
    });
    const writerId = await fresh();
    const writer = new SessionWriter(store, writerId);
    const viaWriter = await timed(async () => {
      for (let seq = 0; seq < EVENTS; seq++)
        await writer.push({ type: 'tool/result', time: T, data: event(seq).data });
      await writer.flush();
    });
    await writer.close();
    await store.close();
    const rate = (count, seconds) => Math.round(count / seconds);
    rows.push({
      backend: name,
      'per-event ev/s': rate(PER_EVENT, perEvent),
      'raw-batch ev/s': rate(EVENTS, raw),
      'writer ev/s': rate(EVENTS, viaWriter),
      'writer/per-event': (rate(EVENTS, viaWriter) / rate(PER_EVENT, perEvent)).toFixed(1),
      'writer/raw-batch': (rate(EVENTS, viaWriter) / rate(EVENTS, raw)).toFixed(2),
      appends: writer.appends,
    });
  }
  console.table(rows);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
