// The behaviours the SDK's own MemorySession is tested for, restated in our words, on every
// backend. Sessions are reopened over a fresh store handle where it matters, so the history comes
// back from storage, not from an object in memory.
import type { AgentInputItem } from '@openai/agents-core';
import { isTidemarkError, type SessionStore } from '@tidemark/core';
import { testBackends } from '@tidemark/test-hosts';
import { afterAll, describe, expect, it } from 'vitest';
import { TidemarkSession } from '../src/index.js';

const user = (text: string): AgentInputItem => ({ role: 'user', content: [{ type: 'input_text', text }] });

async function rejectsWith(promise: Promise<unknown>, code: string, message: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(isTidemarkError(error), `expected a TidemarkError, got ${String(error)}`).toBe(true);
  expect((error as { code: string }).code).toBe(code);
  expect((error as Error).message).toMatch(message);
}

for (const backend of await testBackends('oa')) {
  describe(`TidemarkSession on ${backend.name}`, () => {
    const stores: SessionStore[] = [];
    afterAll(async () => {
      for (const store of stores) await store.close();
      await backend.cleanup();
    });
    async function session(sessionId?: string): Promise<TidemarkSession> {
      const store = await backend.open();
      stores.push(store);
      return new TidemarkSession({ store, ...(sessionId !== undefined && { sessionId }) });
    }

    it('keeps items in order, returns the last `limit` of them, pops and clears', async () => {
      const s = await session('chat-1');
      expect(await s.getSessionId()).toBe('chat-1');
      expect(await s.getItems()).toEqual([]);
      await s.addItems([user('hello')]);
      await s.addItems([user('one'), user('two')]);
      expect(await s.getItems()).toEqual([user('hello'), user('one'), user('two')]);
      expect(await s.getItems(2)).toEqual([user('one'), user('two')]);
      expect(await s.getItems(10)).toEqual([user('hello'), user('one'), user('two')]);
      expect(await s.getItems(0)).toEqual([]);
      expect(await s.popItem()).toEqual(user('two'));
      expect(await s.getItems()).toEqual([user('hello'), user('one')]);
      await s.clearSession();
      expect(await s.getItems()).toEqual([]);
      expect(await s.getItems(3)).toEqual([]);
      expect(await s.popItem()).toBeUndefined();
      await s.clearSession(); // clearing an absent session is not an error
    });

    it('copies items in and out: changing a returned or a given object changes nothing stored', async () => {
      const s = await session();
      const next = user('next');
      await s.addItems([user('start'), next]);
      (next as { content: unknown }).content = 'mutated';
      const items = await s.getItems();
      (items[0] as { content: unknown }).content = 'mutated';
      expect(await s.getItems()).toEqual([user('start'), user('next')]);
      const popped = await s.popItem();
      expect(popped).toEqual(user('next'));
      (popped as { content: unknown }).content = 'mutated';
      expect(await s.getItems()).toEqual([user('start')]);
    });

    it('rewrites a function call and drops its duplicates in one step', async () => {
      const s = await session();
      const call = (id: string, args: string) =>
        ({
          type: 'function_call',
          id,
          callId: 'call-1',
          name: 'lookup',
          status: 'completed',
          arguments: args,
        }) as const;
      await s.addItems([
        user('start'),
        call('old-1', '{"ok":false}'),
        call('old-2', '{"dup":true}'),
        user('after'),
      ]);
      const replacement = call('new', '{"ok":true}');
      await s.applyHistoryMutations({
        mutations: [{ type: 'replace_function_call', callId: 'call-1', replacement }],
      });
      expect(await s.getItems()).toEqual([user('start'), replacement, user('after')]);
    });

    it('applies an append transaction once however often it is retried', async () => {
      const s = await session();
      await s.addItems([user('start')]);
      const appended = user('committed');
      const args = {
        operationId: 'op-append',
        transaction: { type: 'append_items' as const, items: [appended] },
      };
      await s.applyHistoryTransaction(args);
      (appended as { content: unknown }).content = 'mutated'; // the stored copy is unaffected
      await s.addItems([user('later')]);
      await s.applyHistoryTransaction({
        operationId: 'op-append',
        transaction: { type: 'append_items', items: [user('committed')] },
      });
      expect(await s.getItems()).toEqual([user('start'), user('committed'), user('later')]);
    });

    it('replaces an exact suffix once however often it is retried', async () => {
      const s = await session();
      await s.addItems([user('start'), user('blocked')]);
      const args = {
        operationId: 'op-replace',
        transaction: {
          type: 'replace_suffix' as const,
          expectedSuffix: [user('blocked')],
          replacement: [user('accepted')],
        },
      };
      await s.applyHistoryTransaction(args);
      await s.addItems([user('later')]);
      await s.applyHistoryTransaction(args);
      expect(await s.getItems()).toEqual([user('start'), user('accepted'), user('later')]);
    });

    it('rejects a suffix that does not match and does not record its operation id', async () => {
      const s = await session();
      await s.addItems([user('start')]);
      const replace = (expected: AgentInputItem) => ({
        operationId: 'op-after-mismatch',
        transaction: {
          type: 'replace_suffix' as const,
          expectedSuffix: [expected],
          replacement: [user('accepted')],
        },
      });
      await rejectsWith(
        s.applyHistoryTransaction(replace(user('different'))),
        'CONFLICT',
        /suffix no longer matches/,
      );
      expect(await s.getItems()).toEqual([user('start')]);
      await s.applyHistoryTransaction(replace(user('start')));
      expect(await s.getItems()).toEqual([user('accepted')]);
      // A suffix longer than the history never matches.
      await rejectsWith(
        s.applyHistoryTransaction({
          operationId: 'op-too-long',
          transaction: {
            type: 'replace_suffix',
            expectedSuffix: [user('x'), user('accepted')],
            replacement: [],
          },
        }),
        'CONFLICT',
        /suffix/,
      );
    });

    it('rejects an operation id reused with other content, and an empty append counts as content', async () => {
      const s = await session();
      const append = (operationId: string, items: AgentInputItem[]) =>
        s.applyHistoryTransaction({ operationId, transaction: { type: 'append_items', items } });
      await append('op-reused', [user('first')]);
      await rejectsWith(
        append('op-reused', [user('second')]),
        'CONFLICT',
        /already applied with a different/,
      );
      await append('op-empty', []);
      await rejectsWith(append('op-empty', [user('unexpected')]), 'CONFLICT', /already applied/);
      expect(await s.getItems()).toEqual([user('first')]);
    });

    it('forgets operation ids when the session is cleared', async () => {
      const s = await session();
      const args = {
        operationId: 'op-reset',
        transaction: { type: 'append_items' as const, items: [user('x')] },
      };
      await s.applyHistoryTransaction(args);
      await s.clearSession();
      await s.applyHistoryTransaction(args);
      expect(await s.getItems()).toEqual([user('x')]);
    });

    it('keeps the history and operation ids for a second session object with the same id', async () => {
      const store = await backend.open();
      stores.push(store);
      const first = new TidemarkSession({ store, sessionId: 'shared/with spaces' });
      await first.applyHistoryTransaction({
        operationId: 'op-durable',
        transaction: { type: 'append_items', items: [user('kept')] },
      });
      const second = new TidemarkSession({ store, sessionId: 'shared/with spaces' });
      await second.applyHistoryTransaction({
        operationId: 'op-durable',
        transaction: { type: 'append_items', items: [user('kept')] },
      });
      expect(await second.getItems()).toEqual([user('kept')]);
    });
  });
}
