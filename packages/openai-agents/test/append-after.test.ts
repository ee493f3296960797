// Writes confirmed by the append itself (`append(…, { after })`): each write is planned on what the
// same call read and names the last event that read found, so a store that checks `after` refuses a
// batch whose log was deleted and rewritten between the read and the append (nothing written, not
// even a stray batch) and the call plans again; no read after the write. A store without the check
// gets the confirming read after the append. On every backend, with two store instances over one
// store and the rewrite made by the other instance in that window.

import type { AgentInputItem } from '@openai/agents-core';
import { checksAppendAfter, isTidemarkError, type SessionStore } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import {
  countingStore as counting,
  openTwoInstances,
  sharedBackends,
  withInterleaving,
} from '@tidemark/test-hosts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TidemarkSession } from '../src/index.js';

const user = (text: string): AgentInputItem => ({ role: 'user', content: [{ type: 'input_text', text }] });

/**
 * `inner` counted and checking `after`, as host B sees it: after `arm(meanwhile)`, `meanwhile` runs
 * once, right after B's next read or load has finished (another host acting between B's read and
 * its append).
 */
function watched(inner: SessionStore) {
  const counted = counting(inner, true);
  const { store, arm } = withInterleaving(counted.store, { passAfter: true });
  return { store, calls: counted.calls, arm };
}

describe('writes on a store that checks append after', () => {
  it('read once, before the write: addItems and popItem are one read and one append naming the event read', async () => {
    const inner = await openMemoryStore();
    expect(checksAppendAfter(inner)).toBe(true);
    const { store, calls, reset } = counting(inner, true);
    const session = new TidemarkSession({ store, sessionId: 'chat' });
    await session.addItems([user('one')]);
    reset();
    await session.addItems([user('two')]);
    await session.addItems([user('three')]);
    expect(await session.popItem()).toEqual(user('three'));
    expect(calls).toEqual({ reads: 3, loads: 0, appends: 3, afters: 3, updates: 0, conflicts: 0 });
    expect(await new TidemarkSession({ store: inner, sessionId: 'chat' }).getItems()).toEqual([
      user('one'),
      user('two'),
    ]);
  });

  it('gets a confirming read after each append on a store that does not check after', async () => {
    const inner = await openMemoryStore();
    const { store, calls, reset } = counting(inner, false);
    expect(checksAppendAfter(store)).toBe(false);
    const session = new TidemarkSession({ store, sessionId: 'chat' });
    await session.addItems([user('one')]);
    reset();
    await session.addItems([user('two')]);
    await session.addItems([user('three')]);
    expect(calls.appends).toBe(2);
    expect(calls.afters).toBe(0);
    expect(calls.reads).toBe(4);
  });
});

describe.each(await sharedBackends())(
  'cleared and rewritten between B’s read and its append, on two $name store instances',
  (backend) => {
    let close: (() => Promise<void>) | undefined;
    let storeA: SessionStore;
    let storeB: SessionStore;
    beforeAll(async () => {
      ({ storeA, storeB, close } = await openTwoInstances(backend));
    });
    afterAll(() => close?.());

    it('pops the rewritten last item, and the refused batch leaves nothing in the log', async () => {
      const a = new TidemarkSession({ store: storeA, sessionId: 'pop' });
      const b = watched(storeB);
      const sessionB = new TidemarkSession({ store: b.store, sessionId: 'pop' });
      await a.addItems([user('old-1'), user('old-2')]);
      b.arm(async () => {
        await a.clearSession();
        await a.addItems([user('new-1'), user('new-2')]); // as many events as before
      });
      expect(await sessionB.popItem()).toEqual(user('new-2'));
      expect(b.calls.conflicts).toBe(1);
      expect(await a.getItems()).toEqual([user('new-1')]);
      expect(await new TidemarkSession({ store: storeA, sessionId: 'pop' }).getItems(5)).toEqual([
        user('new-1'),
      ]);
      // No stray batch: the pop planned on the old log was never written.
      expect((await storeA.load('pop')).events.map((e) => e.type)).toEqual([
        'openai/item',
        'openai/item',
        'turn/end',
        'openai/truncate',
        'turn/end',
      ]);
    });

    it('adds after the rewritten items, once', async () => {
      const a = new TidemarkSession({ store: storeA, sessionId: 'add' });
      const b = watched(storeB);
      const sessionB = new TidemarkSession({ store: b.store, sessionId: 'add' });
      await a.addItems([user('old')]);
      b.arm(async () => {
        await a.clearSession();
        await a.addItems([user('new')]);
      });
      await sessionB.addItems([user('more')]);
      expect(await a.getItems()).toEqual([user('new'), user('more')]);
      expect(await sessionB.getItems(1)).toEqual([user('more')]);
      expect((await storeA.load('add')).events.filter((e) => e.type === 'turn/end')).toHaveLength(2);
    });

    it('refuses a suffix replacement planned on the old log, and records nothing of it', async () => {
      const a = new TidemarkSession({ store: storeA, sessionId: 'replace' });
      const b = watched(storeB);
      const sessionB = new TidemarkSession({ store: b.store, sessionId: 'replace' });
      await a.addItems([user('start'), user('blocked')]);
      b.arm(async () => {
        await a.clearSession();
        await a.addItems([user('other'), user('history')]);
      });
      const error = await sessionB
        .applyHistoryTransaction({
          operationId: 'op-1',
          transaction: {
            type: 'replace_suffix',
            expectedSuffix: [user('blocked')],
            replacement: [user('ok')],
          },
        })
        .catch((e: unknown) => e);
      expect(isTidemarkError(error, 'CONFLICT'), String(error)).toBe(true);
      expect(await a.getItems()).toEqual([user('other'), user('history')]);
      expect((await storeA.load('replace')).events.some((e) => e.type === 'openai/operation')).toBe(false);
    });
  },
);
