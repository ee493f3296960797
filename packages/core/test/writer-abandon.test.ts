// SessionWriter.abandon(): a writer that cannot go on hands back what it accepted but could not
// make durable, so the application can write it elsewhere instead of losing it.
import { describe, expect, it } from 'vitest';
import { SessionWriter } from '../src/index.js';
import { deferred, faulty, openMemoryStore } from './store-wrappers.js';

const codeOf = (error: unknown) => (error as { code?: string }).code;

describe('SessionWriter.abandon', () => {
  it('after a CONFLICT from another writer, hands back every accepted event and closes', async () => {
    const store = await openMemoryStore();
    await store.create({ id: 's' });
    const writer = new SessionWriter(store, 's', { maxDelayMs: 1000 });
    const pushed = [];
    for (let i = 0; i < 3; i++) pushed.push(await writer.push({ type: 'note', data: { i } }));
    // Another writer takes seq 0 first: the writer's batch can never land.
    await store.append('s', [{ seq: 0, type: 'note', time: '2026-01-01T00:00:00.000Z', data: 'other' }]);
    const flushed = await writer.flush().catch(codeOf);
    expect(flushed).toBe('CONFLICT');
    const left = await writer.abandon();
    expect(left).toEqual(pushed);
    expect(left.map((e) => e.seq)).toEqual([0, 1, 2]);
    await expect(writer.push({ type: 'note', data: 9 })).rejects.toMatchObject({ code: 'CLOSED' });
    await expect(writer.flush()).rejects.toMatchObject({ code: 'CLOSED' });
    await expect(writer.abandon()).rejects.toMatchObject({ code: 'CLOSED' });
    // Nothing of the writer's reached the store, and the caller can write its events after the other's.
    expect((await store.load('s')).events.map((e) => e.data)).toEqual(['other']);
    const next = new SessionWriter(store, 's', { nextSeq: 1 });
    for (const event of left) await next.push({ type: event.type, data: event.data, time: event.time });
    await next.close();
    expect((await store.load('s')).events.map((e) => e.data)).toEqual([
      'other',
      { i: 0 },
      { i: 1 },
      { i: 2 },
    ]);
  });

  it('returns copies: changing them does not change what the writer held', async () => {
    const store = faulty(await openMemoryStore());
    await store.create({ id: 's' });
    const writer = new SessionWriter(store, 's', { maxDelayMs: 1000 });
    await writer.push({ type: 'note', data: { n: 1 } });
    const [first] = await writer.abandon();
    (first!.data as { n: number }).n = 2;
    expect(store.appendCalls).toBe(0);
    expect(await store.has('s')).toBe(false);
  });

  it('waits for the append in flight and returns only what it did not acknowledge', async () => {
    const store = faulty(await openMemoryStore());
    await store.create({ id: 's' });
    const writer = new SessionWriter(store, 's', { maxBatchEvents: 2, maxDelayMs: 1000 });
    const gate = deferred();
    store.gate = gate.promise;
    await writer.push({ type: 'note', data: 0 });
    await writer.push({ type: 'note', data: 1 }); // a full batch: its append starts and waits
    await writer.push({ type: 'note', data: 2 });
    await writer.push({ type: 'note', data: 3 });
    expect(store.appendCalls).toBe(1);
    const abandoned = writer.abandon();
    store.gate = undefined;
    gate.resolve();
    const left = await abandoned;
    // The first batch landed; the second full batch was not started after abandon.
    expect(store.appendCalls).toBe(1);
    expect(writer.durableSeq).toBe(2);
    expect(left.map((e) => e.data)).toEqual([2, 3]);
    expect((await store.load('s')).events.map((e) => e.data)).toEqual([0, 1]);
  });

  it('hands back a failed batch that may have committed, and the caller can tell from the store', async () => {
    const store = faulty(await openMemoryStore());
    await store.create({ id: 's' });
    const writer = new SessionWriter(store, 's', { maxDelayMs: 1000 });
    store.failAfter.add(1); // commits, then the answer is lost
    await writer.push({ type: 'note', data: 0 });
    expect(codeOf(await writer.flush().catch((e: unknown) => e))).toBe('IO');
    const left = await writer.abandon();
    expect(left.map((e) => e.seq)).toEqual([0]);
    const stored = (await store.load('s')).events;
    expect(stored).toEqual(left);
  });

  it('rejects pushes still waiting for space with CLOSED and does not return them', async () => {
    const store = faulty(await openMemoryStore());
    await store.create({ id: 's' });
    const writer = new SessionWriter(store, 's', { maxBufferedEvents: 1, maxDelayMs: 1000 });
    const gate = deferred();
    store.gate = gate.promise;
    await writer.push({ type: 'note', data: 0 });
    const waiting = writer.push({ type: 'note', data: 1 });
    const outcome = waiting.then(
      () => 'accepted',
      (error: unknown) => codeOf(error),
    );
    const abandoned = writer.abandon();
    store.gate = undefined;
    gate.resolve();
    const left = await abandoned;
    // The in-flight append of seq 0 landed and made space; a closed writer admits nothing more.
    expect(await outcome).toBe('CLOSED');
    expect(left).toEqual([]);
    expect((await store.load('s')).events.map((e) => e.data)).toEqual([0]);
  });
});

describe('SessionWriter.abandon racing with flush and close', () => {
  for (const call of ['flush', 'close'] as const) {
    // Guards that a waiting flush/close settles instead of spinning after abandon().
    it(`a ${call}() waiting on an append settles with CLOSED once abandon() hands the rest back`, async () => {
      const store = faulty(await openMemoryStore());
      await store.create({ id: 's' });
      const writer = new SessionWriter(store, 's', { maxBatchEvents: 2, maxDelayMs: 1000 });
      const gate = deferred();
      store.gate = gate.promise;
      for (let i = 0; i < 4; i++) await writer.push({ type: 'note', data: i });
      // The first full batch is in flight; the caller's flush/close waits for all four events.
      const waiting = writer[call]().then(
        () => 'resolved',
        (error: unknown) => codeOf(error),
      );
      const abandoned = writer.abandon();
      store.gate = undefined;
      gate.resolve();
      const left = await abandoned;
      expect(left.map((e) => e.data)).toEqual([2, 3]);
      // Before the fix this never settled: the flush loop spun on microtasks (pump() on a closed
      // writer returns at once), starving timers and I/O, so the whole process hung.
      expect(await waiting).toBe('CLOSED');
      expect((await store.load('s')).events.map((e) => e.data)).toEqual([0, 1]);
    });
  }
});
