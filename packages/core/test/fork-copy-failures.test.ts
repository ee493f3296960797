// fork when its copy fails or races: a fork is all or nothing, a failed one can be retried, and its
// cleanup removes only what this fork created (fake stores, no timing).
import { describe, expect, it } from 'vitest';
import { MemoryVolume } from '../../memory/src/index.js';
import { fork, type SessionEvent, type SessionStore } from '../src/index.js';
import { deferred, faulty, openMemoryStore } from './store-wrappers.js';

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

describe('fork copy atomicity and cleanup', () => {
  // Guards that a default fork is never seen half copied.
  it('copies the prefix in one atomic append by default: a fork is never half there', async () => {
    const store = faulty(await openMemoryStore());
    const events = await parentWith(store, 1200);
    const forked = await fork(store, 'p', 1099, { id: 'child' });
    expect(store.batchSizes.slice(1)).toEqual([1100]);
    expect((await store.load('child')).events).toEqual(events.slice(0, 1100));
    expect(forked.writer.nextSeq).toBe(1100);
  });

  // Guards that a failed copy leaves the child id free for a retry.
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

  // Guards that a chunked copy failing midway deletes its partial child.
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

  // Guards that a lost answer on the last chunk still cleans up the child.
  it('a chunked copy whose last answer was lost fails without leaving the child', async () => {
    const store = faulty(await openMemoryStore());
    await parentWith(store, 8);
    store.failAfter.add(3); // the last chunk commits, its answer is lost
    await expect(fork(store, 'p', 7, { id: 'child', copyBatchEvents: 4 })).rejects.toMatchObject({
      code: 'IO',
    });
    expect(await store.has('child')).toBe(false);
  });

  // Guards that cleanup never removes another writer's session with the child's id.
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

describe('fork copy batches', () => {
  // Guards the copy batch size rule and cleanup of a failed batched copy.
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

describe('fork cleanup across store instances', () => {
  // Guards that cleanup checks its own version (ifUpdatedAt) before deleting the child.
  it('a failed copy does not delete the same-id child another instance forked meanwhile', async () => {
    const volume = new MemoryVolume();
    const a = faulty(await openMemoryStore({ volume }));
    const b = await openMemoryStore({ volume });
    await a.create({ id: 'p' });
    const events: SessionEvent[] = [0, 1, 2, 3].map((seq) => ({ seq, type: 'x', time: T, data: seq }));
    await a.append('p', events);
    // A's copy waits; meanwhile B forks the same parent at the same seq under the same id, and its
    // fork is acknowledged. Then A's copy fails before writing anything.
    const gate = deferred();
    a.gate = gate.promise;
    a.failBefore.add(2);
    const forkA = fork(a, 'p', 3, { id: 'child' }).then(
      () => 'ok',
      (error: unknown) => (error as { code?: string }).code,
    );
    // Let A reach its copy append (create is done, the append waits at the gate).
    const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
    while (a.appendCalls < 2) await tick();
    // B's create comes later than A's (a different createdAt), as two instances' forks do unless
    // they land in the same millisecond. A wait for the clock to move on, not a timing assertion.
    const afterA = new Date().toISOString();
    while (new Date().toISOString() === afterA) await tick();
    const forkB = await fork(b, 'p', 3, { id: 'child' });
    expect((await b.load('child')).events).toEqual(events);
    a.gate = undefined;
    gate.resolve();
    expect(await forkA).toBe('IO');
    // B's acknowledged fork is still there, and B's writer can go on with it.
    expect((await b.load('child')).events).toEqual(events);
    await forkB.writer.push({ type: 'x', data: 'more' });
    await forkB.writer.close();
    expect((await b.load('child')).events).toHaveLength(5);
  });
});
