// Two processes over one shared store (one JSONL root, one SQLite file, one PostgreSQL schema),
// each with its own long-lived TidemarkSession objects, as the workers of a deployment keep them:
// this process is host A, a child process is host B. Whatever one host appends, pops, clears or
// rewrites, the other's next call behaves as in a process that has just started; racing writers
// are refused with CONFLICT or land whole (contract §9, issue 22).
//
// JSONL: a session's writer lock is held by the process that wrote it last until that process
// goes idle; `handOver()` waits the second the contract gives for that before the other host writes.
import type { AgentInputItem } from '@openai/agents-core';
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import { type Host, openStoreAt, type SharedStore, sharedBackends, startHost } from '@tidemark/test-hosts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TidemarkSession } from '../src/index.js';

const HOST = new URL('./fixtures/session-host.mjs', import.meta.url);
const TIMEOUT = 120_000;
const user = (text: string): AgentInputItem => ({ role: 'user', content: [{ type: 'input_text', text }] });
const textOf = (item: AgentInputItem) =>
  ((item as { content: Array<{ text: string }> }).content[0] as { text: string }).text;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(await sharedBackends())('two hosts over one $name store', (backend) => {
  let shared: SharedStore;
  let store: SessionStore;
  let b: Host;
  const a = (sessionId: string) => new TidemarkSession({ store, sessionId });
  const handOver = () => (backend.name === 'jsonl' ? sleep(1200) : Promise.resolve());

  beforeEach(async () => {
    shared = await backend.create();
    store = await openStoreAt(shared.address);
    b = await startHost(shared.address, HOST);
  }, TIMEOUT);
  afterEach(async () => {
    await b.close();
    await store.close();
    await shared.cleanup();
  }, TIMEOUT);

  it('reads on B what A wrote after B read the session', { timeout: TIMEOUT }, async () => {
    const session = a('chat');
    await session.addItems([user('one')]);
    expect(await b.call('getItems', 'chat')).toEqual([user('one')]);
    expect(await b.call('getItems', 'chat', 1)).toEqual([user('one')]);
    await session.addItems([user('two'), user('three')]);
    await session.popItem();
    expect(await b.call('getItems', 'chat')).toEqual([user('one'), user('two')]);
    expect(await b.call('getItems', 'chat', 1)).toEqual([user('two')]);
    await handOver();
    await b.call('addItems', 'chat', [user('four')]);
    expect(await session.getItems(2)).toEqual([user('two'), user('four')]);
    await handOver();
    expect(await session.popItem()).toEqual(user('four'));
  });

  it('plans on the rewritten session after A cleared it and wrote it again', {
    timeout: TIMEOUT,
  }, async () => {
    const session = a('chat');
    await session.addItems([user('old-1'), user('old-2')]);
    expect(await b.call('getItems', 'chat', 1)).toEqual([user('old-2')]);
    await session.clearSession();
    await session.addItems([user('new-1'), user('new-2')]); // as many events as before
    await handOver();
    expect(await b.call('popItem', 'chat')).toEqual(user('new-2'));
    expect(await session.getItems()).toEqual([user('new-1')]);
    await handOver();
    await session.clearSession();
    expect(await b.call('getItems', 'chat')).toEqual([]);
    expect(await b.call('popItem', 'chat')).toBeUndefined();
  });

  it('forgets an operation id on B once A cleared the session', { timeout: TIMEOUT }, async () => {
    const args = { operationId: 'op-1', transaction: { type: 'append_items', items: [user('x')] } };
    const session = a('chat');
    await session.applyHistoryTransaction(args as never);
    await handOver();
    await b.call('applyHistoryTransaction', 'chat', args); // a retry: applied once
    expect(await session.getItems()).toEqual([user('x')]);
    await session.clearSession();
    await b.call('applyHistoryTransaction', 'chat', args);
    expect(await session.getItems()).toEqual([user('x')]);
  });

  it('lets racing first writes to new sessions both land', { timeout: TIMEOUT }, async () => {
    for (let i = 0; i < 10; i++) {
      const id = `new-${i}`;
      const outcomes = await Promise.allSettled([
        a(id).addItems([user(`a${i}`)]),
        b.call('addItems', id, [user(`b${i}`)]),
      ]);
      const landed = expectRaceOutcomes(outcomes, backend.name);
      const stored = (await a(id).getItems()).map(textOf).sort();
      expect(stored).toEqual(landed.map((from) => `${from}${i}`).sort());
    }
  });

  it('keeps every acknowledged item of two racing writers once and in order, over many rounds', {
    timeout: TIMEOUT,
  }, async () => {
    const acked: Record<'a' | 'b', string[]> = { a: [], b: [] };
    const session = a('race');
    for (let round = 0; round < 20; round++) {
      // Plain appends and history transactions, each host with its own long-lived object.
      const outcomes = await Promise.allSettled([
        round % 2 === 0
          ? session.addItems([user(`a${round}`)])
          : session.applyHistoryTransaction({
              operationId: `a-op-${round}`,
              transaction: { type: 'append_items', items: [user(`a${round}`)] },
            }),
        round % 3 === 0
          ? b.call('applyHistoryTransaction', 'race', {
              operationId: `b-op-${round}`,
              transaction: { type: 'append_items', items: [user(`b${round}`)] },
            })
          : b.call('addItems', 'race', [user(`b${round}`)]),
      ]);
      for (const from of expectRaceOutcomes(outcomes, backend.name)) acked[from].push(`${from}${round}`);
    }
    const stored = (await session.getItems()).map(textOf);
    expect(await b.call('getItems', 'race')).toEqual(await session.getItems());
    expect(stored.filter((t) => t.startsWith('a'))).toEqual(acked.a);
    expect(stored.filter((t) => t.startsWith('b'))).toEqual(acked.b);
    expect(stored).toHaveLength(acked.a.length + acked.b.length);
    if (backend.name !== 'jsonl') expect(stored).toHaveLength(40);
    expect((await session.getItems(5)).map(textOf)).toEqual(stored.slice(-5));
  });

  it('pops each item once when both hosts pop at the same time', { timeout: TIMEOUT }, async () => {
    const session = a('pops');
    await session.addItems(Array.from({ length: 12 }, (_, i) => user(`item-${i}`)));
    await handOver();
    const popped: string[] = [];
    for (let round = 0; round < 6; round++) {
      const outcomes = await Promise.allSettled([
        session.popItem(),
        b.call<AgentInputItem>('popItem', 'pops'),
      ]);
      expectRaceOutcomes(outcomes, backend.name);
      for (const outcome of outcomes)
        if (outcome.status === 'fulfilled' && outcome.value !== undefined) popped.push(textOf(outcome.value));
    }
    const left = (await session.getItems()).map(textOf);
    // Every popped item is gone, each was popped once (two identical pop batches must not pass for
    // one retried batch), and what is left is the untouched prefix.
    expect(new Set(popped).size).toBe(popped.length);
    expect([...left, ...popped.sort((x, y) => Number(x.slice(5)) - Number(y.slice(5)))]).toEqual(
      Array.from({ length: 12 }, (_, i) => `item-${i}`),
    );
  });
});

/**
 * The hosts whose racing write landed. A loser may only be refused with a typed, retryable
 * CONFLICT (on JSONL, while the other process holds the session's lock).
 */
function expectRaceOutcomes(outcomes: PromiseSettledResult<unknown>[], backend: string): Array<'a' | 'b'> {
  const landed: Array<'a' | 'b'> = [];
  outcomes.forEach((outcome, i) => {
    if (outcome.status === 'fulfilled') landed.push(i === 0 ? 'a' : 'b');
    else {
      expect(isTidemarkError(outcome.reason, 'CONFLICT'), String(outcome.reason)).toBe(true);
      expect(backend).toBe('jsonl');
    }
  });
  expect(landed.length).toBeGreaterThan(0);
  return landed;
}
