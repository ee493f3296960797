import { describe, expect, it, vi } from 'vitest';
import {
  isTidemarkError,
  nextBatchSize,
  type SessionStore,
  SessionWriter,
  TidemarkError,
} from '../src/index.js';
import { deferred, faulty, openMemoryStore } from './store-wrappers.js';

const T = '2026-01-01T00:00:00.000Z';

async function newSession(store: SessionStore, id = 's1'): Promise<string> {
  await store.create({ id, cwd: '/p' });
  return id;
}

/** The invariants every fault test checks: exists, nothing acknowledged lost, still writable. */
async function assertHealthy(store: SessionStore, id: string, acknowledged: number): Promise<void> {
  expect(await store.has(id)).toBe(true);
  const loaded = await store.load(id);
  expect(loaded.events.length).toBeGreaterThanOrEqual(acknowledged);
  loaded.events.forEach((event, i) => {
    expect(event.seq).toBe(i);
  });
  const next = loaded.events.length;
  await expect(store.append(id, [{ seq: next, type: 'probe', time: T, data: null }])).resolves.toEqual({
    nextSeq: next + 1,
  });
}

describe('nextBatchSize', () => {
  it('takes as many events as count and bytes allow, but always at least one', () => {
    expect(nextBatchSize([], 10, 100)).toBe(0);
    expect(nextBatchSize([500], 10, 100)).toBe(1);
    expect(nextBatchSize([10, 10, 10], 2, 100)).toBe(2);
    expect(nextBatchSize([40, 40, 40], 10, 100)).toBe(2);
    expect(nextBatchSize([40, 60, 1], 10, 100)).toBe(2);
    expect(nextBatchSize([500, 40, 60, 1], 10, 100, 1)).toBe(2);
    expect(nextBatchSize([1, 1, 1], 10, 100, 3)).toBe(0);
    expect(nextBatchSize([40, 61], 10, 100)).toBe(1);
  });

  it('never exceeds either limit except for a single oversized head (exhaustive over small inputs)', () => {
    const sizes = [1, 3, 7];
    const lists: number[][] = [[]];
    for (let len = 1; len <= 4; len++) {
      const prev = lists.filter((l) => l.length === len - 1);
      for (const l of prev) for (const s of sizes) lists.push([...l, s]);
    }
    for (const list of lists) {
      for (let maxEvents = 1; maxEvents <= 4; maxEvents++) {
        for (let maxBytes = 1; maxBytes <= 12; maxBytes++) {
          const n = nextBatchSize(list, maxEvents, maxBytes);
          const bytes = list.slice(0, n).reduce((a, b) => a + b, 0);
          if (list.length > 0) expect(n).toBeGreaterThanOrEqual(1);
          expect(n).toBeLessThanOrEqual(Math.min(maxEvents, list.length));
          if (n > 1) expect(bytes).toBeLessThanOrEqual(maxBytes);
          // maximal: one more event would break a limit
          if (n < list.length && n > 0) {
            expect(n === maxEvents || bytes + list[n]! > maxBytes).toBe(true);
          }
        }
      }
    }
  });
});

describe('SessionWriter', () => {
  it('assigns seqs and times, and group-commits many pushes into few appends', async () => {
    const store = faulty(await openMemoryStore());
    const id = await newSession(store);
    const writer = new SessionWriter(store, id, { maxBatchEvents: 100, maxDelayMs: 50 });
    const pushed = [];
    for (let i = 0; i < 1000; i++) pushed.push(writer.push({ type: 'user/message', data: { i } }));
    const events = await Promise.all(pushed);
    expect(events.map((e) => e.seq)).toEqual([...Array(1000).keys()]);
    expect(events.every((e) => typeof e.time === 'string' && e.time.endsWith('Z'))).toBe(true);
    await writer.flush();
    expect(writer.durableSeq).toBe(1000);
    expect(store.appendCalls).toBeLessThanOrEqual(12);
    expect(Math.max(...store.batchSizes)).toBeLessThanOrEqual(100);
    const loaded = await store.load(id);
    expect(loaded.events.map((e) => e.data)).toEqual([...Array(1000).keys()].map((i) => ({ i })));
  });

  it('splits batches by serialized bytes', async () => {
    const store = faulty(await openMemoryStore());
    const id = await newSession(store);
    const writer = new SessionWriter(store, id, { maxBatchBytes: 300, maxDelayMs: 1000 });
    for (let i = 0; i < 10; i++) void writer.push({ type: 'x', time: T, data: 'a'.repeat(100) });
    await writer.flush();
    // each event serializes to ~160 bytes: one per batch under a 300-byte cap
    expect(store.batchSizes.every((n) => n === 1)).toBe(true);
    expect((await store.load(id)).events).toHaveLength(10);
  });

  it('flushes on its own after maxDelayMs', async () => {
    const store = faulty(await openMemoryStore());
    const id = await newSession(store);
    const writer = new SessionWriter(store, id, { maxDelayMs: 2 });
    await writer.push({ type: 'user/message', data: 'hi' });
    expect(writer.durableSeq).toBe(0);
    await vi.waitFor(() => expect(writer.durableSeq).toBe(1), { timeout: 5000, interval: 5 });
    expect(await store.has(id)).toBe(true);
  });

  it('rejects an invalid event without using a seq', async () => {
    const store = await openMemoryStore();
    const id = await newSession(store);
    const writer = new SessionWriter(store, id);
    await expect(writer.push({ type: 'x', data: 10n as unknown as number })).rejects.toMatchObject({
      code: 'INVALID',
    });
    await expect(writer.push({ type: '', data: 1 })).rejects.toMatchObject({ code: 'INVALID' });
    const ok = await writer.push({ type: 'x', data: 1 });
    expect(ok.seq).toBe(0);
    await writer.close();
    expect((await store.load(id)).events).toHaveLength(1);
  });

  it('keeps the buffer when an append fails, surfaces the error, and a retry lands once', async () => {
    const store = faulty(await openMemoryStore());
    const id = await newSession(store);
    const writer = new SessionWriter(store, id, { maxDelayMs: 1000 });
    await writer.push({ type: 'user/message', data: 'ack' });
    await writer.flush(); // acknowledged: must survive everything below
    store.failBefore.add(2);
    for (let i = 0; i < 5; i++) await writer.push({ type: 'x', data: i });
    const failed = await writer.flush().catch((e: unknown) => e);
    expect(isTidemarkError(failed, 'IO')).toBe(true);
    expect((failed as TidemarkError).errno).toBe('EIO');
    expect(writer.pending).toBe(5);
    expect(writer.error).toBe(failed);
    // no false absence while failed, nothing acknowledged lost
    expect(await store.has(id)).toBe(true);
    expect((await store.load(id)).events).toHaveLength(1);
    // the error surfaces on the next push too
    await expect(writer.push({ type: 'x', data: 'late' })).rejects.toBe(failed);
    await writer.flush();
    expect(writer.pending).toBe(0);
    const loaded = await store.load(id);
    expect(loaded.events.map((e) => e.data)).toEqual(['ack', 0, 1, 2, 3, 4]);
    const after = await writer.push({ type: 'x', data: 'after' });
    expect(after.seq).toBe(6);
    await writer.close();
    await assertHealthy(store, id, 7);
  });

  it('surfaces a background flush failure on the next push', async () => {
    const store = faulty(await openMemoryStore());
    const id = await newSession(store);
    const writer = new SessionWriter(store, id, { maxDelayMs: 1 });
    store.failBefore.add(1);
    await writer.push({ type: 'x', data: 1 });
    await vi.waitFor(() => expect(writer.error).toBeDefined(), { timeout: 5000, interval: 2 });
    await expect(writer.push({ type: 'x', data: 2 })).rejects.toMatchObject({ code: 'IO' });
    await writer.close();
    expect((await store.load(id)).events.map((e) => e.data)).toEqual([1]);
  });

  it('retries idempotently when an append committed but its answer was lost', async () => {
    const store = faulty(await openMemoryStore());
    const id = await newSession(store);
    const writer = new SessionWriter(store, id, { maxDelayMs: 1000 });
    const gate = deferred();
    store.gate = gate.promise;
    store.failAfter.add(1);
    for (let i = 0; i < 3; i++) await writer.push({ type: 'x', data: i });
    const flushing = writer.flush().catch((e: unknown) => e);
    // more events arrive while the first batch is in flight: the retry must not merge them into it
    await vi.waitFor(() => expect(store.appendCalls).toBe(1));
    for (let i = 3; i < 6; i++) await writer.push({ type: 'x', data: i });
    store.gate = undefined;
    gate.resolve();
    const failed = await flushing;
    expect(isTidemarkError(failed, 'IO')).toBe(true);
    // the batch is actually stored, the writer cannot know it
    expect((await store.load(id)).events).toHaveLength(3);
    expect(writer.pending).toBe(6);
    await writer.flush();
    expect(store.batchSizes.slice(0, 2)).toEqual([3, 3]);
    const loaded = await store.load(id);
    expect(loaded.events.map((e) => e.data)).toEqual([0, 1, 2, 3, 4, 5]);
    await writer.close();
    await assertHealthy(store, id, 6);
  });

  it('keeps retrying failed flushes until the store recovers, without duplicates', async () => {
    for (let failing = 1; failing <= 3; failing++) {
      const store = faulty(await openMemoryStore());
      const id = await newSession(store);
      const writer = new SessionWriter(store, id, { maxBatchEvents: 4, maxDelayMs: 1000 });
      for (let n = 1; n <= failing; n++) {
        store.failBefore.add(n * 2);
        store.failAfter.add(n * 2 + 1);
      }
      let acknowledged = 0;
      for (let i = 0; i < 20; i++) {
        try {
          await writer.push({ type: 'x', data: i });
        } catch (error) {
          expect(isTidemarkError(error)).toBe(true);
        }
        if (i % 5 === 4) {
          for (;;) {
            try {
              await writer.flush();
              acknowledged = writer.durableSeq;
              break;
            } catch (error) {
              expect(isTidemarkError(error, 'IO')).toBe(true);
              expect(await store.has(id)).toBe(store.appendCalls > 1 || writer.durableSeq > 0);
            }
          }
        }
      }
      await writer.close();
      const events = (await store.load(id)).events;
      expect(events.length).toBe(acknowledged);
      expect(new Set(events.map((e) => JSON.stringify(e.data))).size).toBe(events.length);
      await assertHealthy(store, id, acknowledged);
    }
  });

  it('applies backpressure: push waits while the buffer is full, seqs follow call order', async () => {
    const store = faulty(await openMemoryStore());
    const id = await newSession(store);
    const writer = new SessionWriter(store, id, {
      maxBufferedEvents: 4,
      maxBatchEvents: 2,
      maxDelayMs: 1000,
    });
    const gate = deferred();
    store.gate = gate.promise;
    const settled: number[] = [];
    const pushes = [...Array(10).keys()].map((i) =>
      writer.push({ type: 'x', data: i }).then((e) => {
        settled.push(e.seq);
        return e;
      }),
    );
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toEqual([0, 1, 2, 3]);
    expect(writer.pending).toBe(10);
    store.gate = undefined;
    gate.resolve();
    const events = await Promise.all(pushes);
    expect(events.map((e) => e.seq)).toEqual([...Array(10).keys()]);
    expect(events.map((e) => e.data)).toEqual([...Array(10).keys()]);
    await writer.flush();
    expect(Math.max(...store.batchSizes)).toBeLessThanOrEqual(2);
    expect((await store.load(id)).events.map((e) => e.data)).toEqual([...Array(10).keys()]);
  });

  it('rejects waiting pushes on failure and gives their seqs back', async () => {
    const store = faulty(await openMemoryStore());
    const id = await newSession(store);
    const writer = new SessionWriter(store, id, { maxBufferedEvents: 2, maxDelayMs: 1000 });
    store.failBefore.add(1);
    const results = await Promise.allSettled([0, 1, 2, 3].map((i) => writer.push({ type: 'x', data: i })));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected']);
    expect(writer.nextSeq).toBe(2);
    await writer.flush();
    expect((await writer.push({ type: 'x', data: 'next' })).seq).toBe(2);
    await writer.close();
    expect((await store.load(id)).events.map((e) => e.data)).toEqual([0, 1, 'next']);
  });

  it('close drains to quiescence, then rejects with CLOSED', async () => {
    const store = faulty(await openMemoryStore());
    const id = await newSession(store);
    const writer = new SessionWriter(store, id, { maxBatchEvents: 3, maxDelayMs: 1000 });
    for (let i = 0; i < 7; i++) void writer.push({ type: 'x', data: i });
    await writer.close();
    expect(writer.pending).toBe(0);
    const calls = store.appendCalls;
    expect((await store.load(id)).events).toHaveLength(7);
    await expect(writer.push({ type: 'x', data: 1 })).rejects.toMatchObject({ code: 'CLOSED' });
    await expect(writer.flush()).rejects.toMatchObject({ code: 'CLOSED' });
    await new Promise((r) => setTimeout(r, 10));
    expect(store.appendCalls).toBe(calls);
  });

  it('a close that cannot drain rejects, keeps the events, and can be retried', async () => {
    const store = faulty(await openMemoryStore());
    const id = await newSession(store);
    const writer = new SessionWriter(store, id, { maxDelayMs: 1000 });
    store.failBefore.add(1);
    await writer.push({ type: 'x', data: 1 });
    await expect(writer.close()).rejects.toMatchObject({ code: 'IO' });
    expect(writer.pending).toBe(1);
    await writer.close();
    await assertHealthy(store, id, 1);
  });

  it('surfaces CONFLICT when another writer took the seqs', async () => {
    const store = await openMemoryStore();
    const id = await newSession(store);
    await store.append(id, [{ seq: 0, type: 'x', time: T, data: 'other' }]);
    const writer = new SessionWriter(store, id);
    await writer.push({ type: 'x', data: 'mine' });
    await expect(writer.flush()).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await store.load(id)).events.map((e) => e.data)).toEqual(['other']);
  });

  it('validates its options', async () => {
    const store = await openMemoryStore();
    expect(() => new SessionWriter(store, 'bad/id')).toThrow(TidemarkError);
    expect(() => new SessionWriter(store, 's', { maxBatchEvents: 0 })).toThrow(/maxBatchEvents/);
    expect(() => new SessionWriter(store, 's', { nextSeq: -1 })).toThrow(/nextSeq/);
  });
});
