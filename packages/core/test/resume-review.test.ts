// Regression tests from the write-path review of resume and fork (fake stores, no timing).
import { describe, expect, it } from 'vitest';
import {
  type ClosingEvent,
  fork,
  isTidemarkError,
  resume,
  type SessionEvent,
  type SessionStore,
} from '../src/index.js';
import { faulty, openMemoryStore } from './store-wrappers.js';

const T = '2026-01-01T00:00:00.000Z';

async function parentWith(store: SessionStore, count: number, id = 'p'): Promise<SessionEvent[]> {
  await store.create({ id, cwd: '/proj' });
  const events: SessionEvent[] = [...Array(count).keys()].map((seq) => ({
    seq,
    type: seq % 10 === 9 ? 'turn/end' : 'x',
    time: T,
    data: { seq },
  }));
  await store.append(id, events);
  return events;
}

describe('fork (review regressions)', () => {
  it('copies the prefix in one atomic append by default: a fork is never half there', async () => {
    const store = faulty(await openMemoryStore());
    const events = await parentWith(store, 1200);
    const forked = await fork(store, 'p', 1099, { id: 'child' });
    expect(store.batchSizes.slice(1)).toEqual([1100]);
    expect((await store.load('child')).events).toEqual(events.slice(0, 1100));
    expect(forked.writer.nextSeq).toBe(1100);
  });

  it('a fork whose copy failed can be retried with the same id', async () => {
    const store = faulty(await openMemoryStore());
    const events = await parentWith(store, 20);
    store.failBefore.add(2); // the copy (append #1 built the parent)
    await expect(fork(store, 'p', 9, { id: 'child' })).rejects.toMatchObject({ code: 'IO' });
    expect(await store.has('child')).toBe(false);
    const again = await fork(store, 'p', 9, { id: 'child' });
    expect(again.meta.parent).toEqual({ id: 'p', seq: 9 });
    expect((await store.load('child')).events).toEqual(events.slice(0, 10));
  });

  it('a chunked copy that fails midway leaves no partial child behind', async () => {
    const store = faulty(await openMemoryStore());
    const events = await parentWith(store, 20);
    store.failBefore.add(3); // the second chunk
    await expect(fork(store, 'p', 9, { id: 'child', copyBatchEvents: 4 })).rejects.toMatchObject({
      code: 'IO',
    });
    // Not a session that claims parent p@9 while holding only 4 of its 10 events.
    expect(await store.has('child')).toBe(false);
    expect((await store.list()).sessions.map((s) => s.id)).toEqual(['p']);
    await fork(store, 'p', 9, { id: 'child', copyBatchEvents: 4 });
    expect((await store.load('child')).events).toEqual(events.slice(0, 10));
  });

  it('a chunked copy whose last answer was lost fails without leaving the child', async () => {
    const store = faulty(await openMemoryStore());
    await parentWith(store, 8);
    store.failAfter.add(3); // the last chunk commits, its answer is lost
    await expect(fork(store, 'p', 7, { id: 'child', copyBatchEvents: 4 })).rejects.toMatchObject({
      code: 'IO',
    });
    expect(await store.has('child')).toBe(false);
  });

  it('never deletes a session it did not create: a CONFLICT leaves the other writer’s data', async () => {
    const inner = await openMemoryStore();
    const store = faulty(inner);
    await parentWith(store, 8);
    // Another instance over the same ids is modelled by appending to the child id between create
    // and the copy: the copy then meets CONFLICT and must not remove what the other writer wrote.
    const original = store.append.bind(store);
    let raced = false;
    store.append = async (id, batch) => {
      if (id === 'child' && !raced) {
        raced = true;
        await inner.append('child', [{ seq: 0, type: 'other', time: T, data: 'theirs' }]);
      }
      return original(id, batch);
    };
    await expect(fork(store, 'p', 3, { id: 'child' })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await store.load('child')).events.map((e) => e.data)).toEqual(['theirs']);
  });
});

describe('resume (review regressions)', () => {
  it('a hook returning something that is not a { type, data } object is INVALID, not a TypeError', async () => {
    const store = await openMemoryStore();
    await store.create({ id: 's1' });
    await store.append('s1', [{ seq: 0, type: 'turn/start', time: T, data: null }]);
    for (const bad of [[null], [42], ['turn/end'], [1n], [[]]]) {
      const result = await resume(store, 's1', {
        closeInterruptedTurn: () => bad as unknown as ClosingEvent[],
      }).catch((error: unknown) => error);
      expect(isTidemarkError(result, 'INVALID')).toBe(true);
    }
    expect((await store.load('s1')).events).toHaveLength(1);
  });
});

describe('fork copy batches (review regressions)', () => {
  it('splits only a prefix larger than copyBatchBytes, and still cleans up a failure', async () => {
    const store = faulty(await openMemoryStore());
    const events = await parentWith(store, 10);
    // each event serializes to ~70 bytes: 150 bytes per append takes two of them
    await fork(store, 'p', 9, { id: 'small', copyBatchBytes: 150 });
    expect(store.batchSizes.slice(1)).toEqual([2, 2, 2, 2, 2]);
    expect((await store.load('small')).events).toEqual(events);
    store.failBefore.add(9);
    await expect(fork(store, 'p', 9, { id: 'c', copyBatchBytes: 150 })).rejects.toMatchObject({ code: 'IO' });
    expect(await store.has('c')).toBe(false);
    await expect(fork(store, 'p', 9, { copyBatchBytes: 0 })).rejects.toMatchObject({ code: 'INVALID' });
  });
});
