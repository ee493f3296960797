// A flush whose target included seqs a failed push handed back must settle once the rest is
// durable (fake store and deferred promises only, no timing assumptions).
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

describe('SessionWriter flush after a handed-back push', () => {
  // Guards against a flush spinning forever on seqs that were handed back.
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

  // Guards the same when a new push reused the handed-back seq before the flush looked again.
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
});
