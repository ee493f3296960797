// Regression tests from the write-path review: each drives SessionWriter through a fault or a
// race with a fake store and deferred promises only (no timing assumptions).
import { describe, expect, it } from 'vitest';
import { SessionWriter } from '../src/index.js';
import { deferred, faulty, openMemoryStore } from './store-wrappers.js';

/** Whether `promise` settles within `hops` microtask turns (a spinning loop never lets it). */
async function settlesWithin(promise: Promise<unknown>, hops: number): Promise<boolean> {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  for (let i = 0; i < hops && !done; i++) await Promise.resolve();
  return done;
}

describe('SessionWriter (review regressions)', () => {
  it('a flush whose target included handed-back seqs settles once the rest is durable', async () => {
    const store = faulty(await openMemoryStore());
    await store.create({ id: 's1' });
    const writer = new SessionWriter(store, 's1', { maxBufferedEvents: 1, maxDelayMs: 1000 });
    const gate = deferred();
    store.gate = gate.promise;
    store.failBefore.add(1);
    await writer.push({ type: 'x', data: 0 });
    // Buffer full: this push waits, and its seq (1) is counted by the flush below.
    const waiting = writer.push({ type: 'x', data: 1 });
    // The producer's natural reaction to a rejected push: flush (retry) and go on.
    const retried = waiting.then(
      () => 'accepted',
      () => writer.flush(),
    );
    const flushing = writer.flush();
    flushing.catch(() => undefined);
    store.gate = undefined;
    gate.resolve();
    await retried;
    const settled = await settlesWithin(flushing, 10_000);
    if (!settled) {
      // Unstick the spinning flush before failing, so the worker is not left busy forever.
      await writer.push({ type: 'x', data: 'unstick' });
      await writer.flush();
    }
    expect(settled).toBe(true);
    await expect(flushing).resolves.toBeUndefined();
    expect(writer.durableSeq).toBe(1);
    expect((await store.load('s1')).events.map((e) => e.data)).toEqual([0]);
  });

  it('…and when a new push reused a handed-back seq before that flush looked again', async () => {
    const store = faulty(await openMemoryStore());
    await store.create({ id: 's1' });
    const writer = new SessionWriter(store, 's1', { maxBufferedEvents: 1, maxDelayMs: 1000 });
    const gate = deferred();
    store.gate = gate.promise;
    store.failBefore.add(1);
    await writer.push({ type: 'x', data: 0 });
    const waiting = writer.push({ type: 'x', data: 1 });
    let again: Promise<unknown> | undefined;
    const retried = waiting.then(
      () => 'accepted',
      async () => {
        const flushed = writer.flush();
        // The producer pushes its next event at once: it gets the handed-back seq 1.
        again = writer.push({ type: 'x', data: 'again' });
        await flushed;
      },
    );
    const flushing = writer.flush();
    flushing.catch(() => undefined);
    store.gate = undefined;
    gate.resolve();
    await retried;
    const settled = await settlesWithin(flushing, 10_000);
    if (!settled) {
      await writer.flush();
    }
    expect(settled).toBe(true);
    await expect(again).resolves.toMatchObject({ seq: 1 });
    await writer.close();
    expect((await store.load('s1')).events.map((e) => e.data)).toEqual([0, 'again']);
  });

  it('the event push resolves with is the caller’s: mutating it changes nothing stored', async () => {
    const store = faulty(await openMemoryStore());
    await store.create({ id: 's1' });
    const writer = new SessionWriter(store, 's1', { maxDelayMs: 1000 });
    const first = await writer.push({ type: 'x', data: { n: 1 } });
    (first.data as { n: number }).n = 2;
    first.type = 'mutated';
    await writer.flush();
    expect((await store.load('s1')).events.map((e) => [e.type, e.data])).toEqual([['x', { n: 1 }]]);
  });

  it('a mutated resolved event does not turn a lost-answer retry into CONFLICT', async () => {
    const store = faulty(await openMemoryStore());
    await store.create({ id: 's1' });
    const writer = new SessionWriter(store, 's1', { maxDelayMs: 1000 });
    store.failAfter.add(1); // committed, answer lost
    const event = await writer.push({ type: 'x', data: { n: 1 } });
    await expect(writer.flush()).rejects.toMatchObject({ code: 'IO' });
    (event.data as { n: number }).n = 2;
    await writer.flush();
    await writer.close();
    expect((await store.load('s1')).events.map((e) => e.data)).toEqual([{ n: 1 }]);
  });

  it('a push that waited for space resolves with a copy too', async () => {
    const store = faulty(await openMemoryStore());
    await store.create({ id: 's1' });
    const writer = new SessionWriter(store, 's1', { maxBufferedEvents: 1, maxDelayMs: 1000 });
    const gate = deferred();
    store.gate = gate.promise;
    await writer.push({ type: 'x', data: 0 });
    const waited = writer.push({ type: 'x', data: { n: 1 } });
    const second = deferred();
    store.gate = second.promise; // holds the append of the waited event until it is mutated
    gate.resolve();
    const event = await waited;
    (event.data as { n: number }).n = 2;
    store.gate = undefined;
    second.resolve();
    await writer.close();
    expect((await store.load('s1')).events.map((e) => e.data)).toEqual([0, { n: 1 }]);
  });
});
