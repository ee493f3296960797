// The event a push resolves with is a copy: the caller may mutate it freely.
import { describe, expect, it } from 'vitest';
import { SessionWriter } from '../src/index.js';
import { deferred, faulty, openMemoryStore } from './store-wrappers.js';

describe('SessionWriter resolves pushes with copies', () => {
  // Guards that mutating a resolved event changes nothing stored.
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

  // Guards that a lost-answer retry resends the original, not the mutated, event.
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

  // Guards that a push that waited for buffer space resolves with a copy as well.
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
