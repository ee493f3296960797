// Warm appends confirmed by the append itself (`append(…, { after })`): an object that holds a
// session plans its write on the cache and names the log's last event it knows, so a store that
// checks `after` refuses a write planned on a log that is no longer there (nothing written, not
// even a stray batch), and the object reads the session and plans again; no read before the write
// and none after it. A store without the check gets both reads. And on every backend, with two
// store instances over one store: whatever another host deleted and rewrote behind the cache, an
// append lands on what the store holds.

import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { checksAppendAfter, type SessionStore } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { countingStore as counting, openTwoInstances, sharedBackends } from '@tidemark/test-hosts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TidemarkSessionStore } from '../src/index.js';

const KEY: SessionKey = { projectKey: 'proj', sessionId: 'shared' };
const SUB: SessionKey = { ...KEY, subpath: 'subagents/agent-1' };
const line = (uuid: string, text: string): SessionStoreEntry => ({
  type: 'user',
  uuid,
  message: { role: 'user', content: text },
});

/** How many appends (batches of entries) the session's log holds, stray ones included. */
async function appendBatches(store: SessionStore): Promise<number> {
  const id = (await store.list()).sessions[0]!.id;
  return (await store.load(id)).events.filter((e) => e.type === 'claude/append').length;
}

describe('warm appends on a store that checks append after', () => {
  it('read nothing: each append is one store append naming the event it follows', async () => {
    const inner = await openMemoryStore();
    expect(checksAppendAfter(inner)).toBe(true);
    const { store, calls, reset } = counting(inner, true);
    const s = new TidemarkSessionStore({ store });
    await s.append(KEY, [line('u0', 'first')]);
    reset();
    for (let i = 1; i <= 5; i++) await s.append(KEY, [line(`u${i}`, `line ${i}`)]);
    await s.append(SUB, [line('s1', 'sub')]);
    expect(calls).toEqual({ reads: 0, loads: 0, appends: 6, afters: 6, updates: 6, conflicts: 0 });
    const fresh = new TidemarkSessionStore({ store: inner });
    expect((await fresh.load(KEY))?.map((e) => e.uuid)).toEqual(['u0', 'u1', 'u2', 'u3', 'u4', 'u5']);
    expect(await fresh.load(SUB)).toEqual([line('s1', 'sub')]);
    expect((await fresh.listSessionSummaries('proj'))[0]?.data).toMatchObject({ firstPrompt: 'first' });
  });

  it('confirms with a read an append whose entries the cache holds already, and appends nothing', async () => {
    const inner = await openMemoryStore();
    const { store, calls, reset } = counting(inner, true);
    const s = new TidemarkSessionStore({ store });
    await s.append(KEY, [line('u1', 'one')]);
    reset();
    await s.append(KEY, [line('u1', 'one')]);
    expect(calls.appends).toBe(0);
    expect(calls.reads + calls.loads).toBeGreaterThan(0);
  });

  it('gets a read before and after each append on a store that does not check after', async () => {
    const inner = await openMemoryStore();
    const { store, calls, reset } = counting(inner, false);
    expect(checksAppendAfter(store)).toBe(false);
    const s = new TidemarkSessionStore({ store });
    await s.append(KEY, [line('u0', 'first')]);
    reset();
    for (let i = 1; i <= 3; i++) await s.append(KEY, [line(`u${i}`, `line ${i}`)]);
    expect(calls.appends).toBe(3);
    expect(calls.afters).toBe(0);
    expect(calls.reads).toBe(6);
  });

  it('refuses by the append a batch planned on a log another host deleted and rewrote, and leaves no stray batch', async () => {
    const inner = await openMemoryStore();
    const { store, calls, reset } = counting(inner, true);
    const a = new TidemarkSessionStore({ store: inner });
    const b = new TidemarkSessionStore({ store });
    await a.append(KEY, [line('u1', 'first version')]);
    expect(await b.load(KEY)).toEqual([line('u1', 'first version')]);
    await a.delete(KEY);
    await a.append(KEY, [line('u2', 'second version')]); // as many events as before
    reset();
    await b.append(KEY, [line('u1', 'first version'), line('u3', 'more')]);
    expect(calls.conflicts).toBe(1);
    const expected = [line('u2', 'second version'), line('u1', 'first version'), line('u3', 'more')];
    expect(await new TidemarkSessionStore({ store: inner }).load(KEY)).toEqual(expected);
    expect(await appendBatches(inner)).toBe(2);
  });
});

describe.each(await sharedBackends())(
  'behind the cache of host B, on two $name store instances',
  (backend) => {
    let close: (() => Promise<void>) | undefined;
    let storeA: SessionStore;
    let storeB: SessionStore;
    beforeAll(async () => {
      ({ storeA, storeB, close } = await openTwoInstances(backend));
    });
    afterAll(() => close?.());

    it('stores an append again that B had cached once A deleted the session', async () => {
      const key = { ...KEY, sessionId: 'deleted' };
      const a = new TidemarkSessionStore({ store: storeA });
      const b = new TidemarkSessionStore({ store: storeB });
      await a.append(key, [line('u1', 'one')]);
      expect(await b.load(key)).toEqual([line('u1', 'one')]);
      await a.delete(key);
      await b.append(key, [line('u1', 'one')]);
      expect(await a.load(key)).toEqual([line('u1', 'one')]);
      expect(await b.load(key)).toEqual([line('u1', 'one')]);
    });

    it('appends on the session A deleted and rewrote to the same length, as planned on it', async () => {
      const key = { ...KEY, sessionId: 'rewritten' };
      const a = new TidemarkSessionStore({ store: storeA });
      const b = new TidemarkSessionStore({ store: storeB });
      await a.append(key, [line('u1', 'first version')]);
      expect(await b.load(key)).toEqual([line('u1', 'first version')]);
      await a.delete(key);
      await a.append(key, [line('u2', 'second version')]);
      await b.append(key, [line('u1', 'first version'), line('u3', 'more')]);
      const expected = [line('u2', 'second version'), line('u1', 'first version'), line('u3', 'more')];
      expect(await new TidemarkSessionStore({ store: storeA }).load(key)).toEqual(expected);
      expect(await b.load(key)).toEqual(expected);
      const summaries = await new TidemarkSessionStore({ store: storeA }).listSessionSummaries('proj');
      expect(summaries.find((s) => s.sessionId === 'rewritten')?.data).toMatchObject({
        firstPrompt: 'second version',
      });
    });

    it('stores on the session A extended, and keeps appending warm on both', async () => {
      const key = { ...KEY, sessionId: 'extended' };
      const a = new TidemarkSessionStore({ store: storeA });
      const b = new TidemarkSessionStore({ store: storeB });
      await a.append(key, [line('a1', 'A')]);
      expect(await b.load(key)).toEqual([line('a1', 'A')]);
      for (let i = 2; i <= 4; i++) {
        await a.append(key, [line(`a${i}`, 'A')]);
        await b.append(key, [line(`b${i}`, 'B')]);
      }
      const uuids = ['a1', 'a2', 'b2', 'a3', 'b3', 'a4', 'b4'];
      expect((await new TidemarkSessionStore({ store: storeB }).load(key))?.map((e) => e.uuid)).toEqual(
        uuids,
      );
      expect((await a.load(key))?.map((e) => e.uuid)).toEqual(uuids);
    });
  },
);
