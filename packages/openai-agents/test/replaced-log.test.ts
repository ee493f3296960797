// A write planned on a log that another host deletes and rewrites to the same length before the
// write lands: the append's seq check passes, so only the link of the batch to the closing event
// before it tells. Deterministic: a store wrapper lets host A clear and rewrite the session right
// after host B's read, before B appends.
import type { AgentInputItem } from '@openai/agents-core';
import { openMemoryStore } from '@tidemark/memory';
import { withInterleaving } from '@tidemark/test-hosts';
import { describe, expect, it } from 'vitest';
import { TidemarkSession } from '../src/index.js';

const user = (text: string): AgentInputItem => ({ role: 'user', content: [{ type: 'input_text', text }] });

describe('a session cleared and rewritten to the same length between a read and a write', () => {
  it('pops the rewritten last item, not the one it read, and every reader skips the stray batch', async () => {
    const inner = await openMemoryStore();
    const a = new TidemarkSession({ store: inner, sessionId: 'chat' });
    const b = withInterleaving(inner);
    const sessionB = new TidemarkSession({ store: b.store, sessionId: 'chat' });
    await a.addItems([user('old-1'), user('old-2')]);
    b.arm(async () => {
      await a.clearSession();
      await a.addItems([user('new-1'), user('new-2')]);
    });
    expect(await sessionB.popItem()).toEqual(user('new-2'));
    expect(await a.getItems()).toEqual([user('new-1')]);
    expect(await a.getItems(1)).toEqual([user('new-1')]);
    expect(await new TidemarkSession({ store: inner, sessionId: 'chat' }).getItems(5)).toEqual([
      user('new-1'),
    ]);
    // The batch planned on the old log is in the new one, linked to the old log: skipped.
    const types = (await inner.load('chat')).events.map((e) => e.type);
    expect(types).toEqual([
      'openai/item',
      'openai/item',
      'turn/end',
      'openai/truncate',
      'turn/end', // the stray pop
      'openai/truncate',
      'turn/end',
    ]);
  });

  it('does not count a suffix replacement planned on the old log', async () => {
    const inner = await openMemoryStore();
    const a = new TidemarkSession({ store: inner, sessionId: 'chat' });
    const b = withInterleaving(inner);
    const sessionB = new TidemarkSession({ store: b.store, sessionId: 'chat' });
    await a.addItems([user('start'), user('blocked')]);
    b.arm(async () => {
      await a.clearSession();
      await a.addItems([user('other'), user('history')]);
    });
    const replace = {
      operationId: 'op-1',
      transaction: {
        type: 'replace_suffix' as const,
        expectedSuffix: [user('blocked')],
        replacement: [user('accepted')],
      },
    };
    // Planned on [start, blocked], landed on [other, history]: found out, planned again, refused.
    await expect(sessionB.applyHistoryTransaction(replace)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await a.getItems()).toEqual([user('other'), user('history')]);
    expect(await a.getItems(1)).toEqual([user('history')]);
  });

  it('adds items once, after the rewritten history', async () => {
    const inner = await openMemoryStore();
    const a = new TidemarkSession({ store: inner, sessionId: 'chat' });
    const b = withInterleaving(inner);
    const sessionB = new TidemarkSession({ store: b.store, sessionId: 'chat' });
    await a.addItems([user('old')]);
    b.arm(async () => {
      await a.clearSession();
      await a.addItems([user('new')]);
    });
    await sessionB.addItems([user('from B')]);
    expect(await a.getItems()).toEqual([user('new'), user('from B')]);
    expect(await a.getItems(2)).toEqual([user('new'), user('from B')]);
  });

  it('on the append-after path, pops the rewritten last item with no stray batch: the append refuses the plan on the old log', async () => {
    const inner = await openMemoryStore();
    const a = new TidemarkSession({ store: inner, sessionId: 'chat' });
    const b = withInterleaving(inner, { passAfter: true });
    const sessionB = new TidemarkSession({ store: b.store, sessionId: 'chat' });
    await a.addItems([user('old-1'), user('old-2')]);
    b.arm(async () => {
      await a.clearSession();
      await a.addItems([user('new-1'), user('new-2')]);
    });
    expect(await sessionB.popItem()).toEqual(user('new-2'));
    expect(await a.getItems()).toEqual([user('new-1')]);
    const types = (await inner.load('chat')).events.map((e) => e.type);
    expect(types).toEqual(['openai/item', 'openai/item', 'turn/end', 'openai/truncate', 'turn/end']);
  });
});
