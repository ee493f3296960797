// close: CLOSED for every method, and everything identical after close and reopen.
import { isTidemarkError, type JsonValue, type SessionStore } from '@tidemark/core';
import { expect } from 'vitest';
import { type ContractCheck, collect, describeError, ev, evs, expectCode, violation } from '../harness.js';
import { byteIdentical, eventsOf, listAll, materialize } from './support.js';

/** The checks of the `close` group. */
export const closeChecks: ContractCheck[] = [
  {
    group: 'close',
    name: 'every method rejects with CLOSED after close',
    async run(ctx) {
      const store = await ctx.open();
      await materialize(store, 'open-then-closed');
      const readBeforeClose = store.read('open-then-closed');
      await store.close();
      await expectCode(store.create({ id: 'x' }), 'CLOSED', 'create');
      await expectCode(store.create(), 'CLOSED', 'create without id');
      await expectCode(store.append('open-then-closed', [ev(1)]), 'CLOSED', 'append');
      await expectCode(store.load('open-then-closed'), 'CLOSED', 'load');
      await expectCode(() => collect(store.read('open-then-closed')), 'CLOSED', 'read');
      await expectCode(() => collect(readBeforeClose), 'CLOSED', 'iterating a read created before close');
      await expectCode(store.list(), 'CLOSED', 'list');
      await expectCode(store.has('open-then-closed'), 'CLOSED', 'has');
      await expectCode(store.update('open-then-closed', { title: 'x' }), 'CLOSED', 'update');
      await expectCode(store.delete('open-then-closed'), 'CLOSED', 'delete');
      try {
        await store.close();
      } catch (error) {
        if (!isTidemarkError(error, 'CLOSED'))
          violation(`a second close() must resolve or be CLOSED, got ${describeError(error)}`);
      }
      const reopened = await ctx.reopen(store);
      expect(await eventsOf(reopened, 'open-then-closed')).toEqual(evs(0, 1));
    },
  },
  {
    group: 'close',
    name: 'everything persists across close and reopen, summaries included',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'p-1', cwd: '/a', title: 'one', tags: ['t'], parent: { id: 'p-0', seq: 1 } });
      await store.append('p-1', [ev(0, 'user/message', { text: 'hello' }), ev(1, 'turn/end')]);
      await store.append('p-1', [
        ev(2, 'tool/call', JSON.parse('{"__proto__":{"x":1},"u":"\\ud800"}') as JsonValue),
      ]);
      await store.create({ id: 'p-2', cwd: '/b' });
      await store.update('p-2', { attrs: { pending: true } });
      await store.append('p-2', [ev(0, 'turn/start'), ev(1, 'turn/end'), ev(2, 'note')]);
      await store.load('p-2', { tail: 'cut' });
      await materialize(store, 'p-3');
      await store.update('p-3', { title: 'three', firstPrompt: 'fp' });
      await materialize(store, 'p-gone');
      await store.delete('p-gone');
      await store.create({ id: 'p-pending' });
      const snapshot = async (s: SessionStore) => ({
        list: await listAll(s),
        loads: await Promise.all(['p-1', 'p-2', 'p-3'].map((id) => s.load(id))),
        streamed: await collect(s.read('p-1')),
      });
      const before = await snapshot(store);
      await store.close();
      const reopened = await ctx.reopen(store);
      const after = await snapshot(reopened);
      expect(after.list).toEqual(before.list);
      expect(after.loads.map((l) => [l.meta, l.summary, l.events, l.committedSeq, l.interrupted])).toEqual(
        before.loads.map((l) => [l.meta, l.summary, l.events, l.committedSeq, l.interrupted]),
      );
      byteIdentical(after.streamed, before.streamed, 'read after reopen');
      expect(await reopened.has('p-gone')).toBe(false);
      expect(await reopened.has('p-pending')).toBe(false);
      await expectCode(
        reopened.append('p-pending', [ev(0)]),
        'NOT_FOUND',
        'a reservation does not survive close',
      );
      expect(await reopened.append('p-1', [ev(3, 'turn/end')])).toEqual({ nextSeq: 4 });
      expect(await reopened.append('p-2', [ev(2, 'note')])).toEqual({ nextSeq: 3 });
      // An idempotent retry must also be recognised from storage alone, with no memory of the call.
      expect(await reopened.append('p-1', [ev(3, 'turn/end')]), 'retry after reopen').toEqual({ nextSeq: 4 });
      await expectCode(
        reopened.append('p-1', [ev(3, 'note')]),
        'CONFLICT',
        'different event at a stored seq after reopen',
      );
    },
  },
];
