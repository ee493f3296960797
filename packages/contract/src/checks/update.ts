// update: fields, updatedAt, atomic rejection of a bad patch, and the patch of a pending session.
import { expect } from 'vitest';
import { type ContractCheck, describeError, ev, expectCode, pause, violation } from '../harness.js';
import { materialize } from './support.js';

/** The checks of the `update` group. */
export const updateChecks: ContractCheck[] = [
  {
    group: 'update',
    name: 'update changes fields, moves updatedAt, and agrees with load and list',
    async run(ctx) {
      const store = await ctx.open();
      await materialize(store, 'upd', [ev(0, 'user/message', { text: 'prompt' })]);
      const before = (await store.load('upd')).summary;
      await pause(3);
      const returned = await store.update('upd', {
        title: 'New',
        tags: ['a'],
        attrs: { k: [1, { v: null }] },
        firstPrompt: 'override',
      });
      expect(returned).toMatchObject({
        title: 'New',
        tags: ['a'],
        attrs: { k: [1, { v: null }] },
        firstPrompt: 'override',
      });
      if (!(returned.updatedAt > before.updatedAt))
        violation(`updatedAt did not move: ${before.updatedAt} → ${returned.updatedAt}`);
      expect(returned.createdAt).toBe(before.createdAt);
      expect(returned.eventCount).toBe(1);
      expect((await store.load('upd')).summary).toEqual(returned);
      expect((await store.list()).sessions[0]).toEqual(returned);
      const partial = await store.update('upd', { title: 'Newer' });
      expect(partial).toMatchObject({ title: 'Newer', tags: ['a'], firstPrompt: 'override' });
      if (!(partial.updatedAt >= returned.updatedAt)) violation('updatedAt went backwards');
      // An empty patch is a touch: it moves updatedAt and nothing else. Lifecycle relies on it,
      // so that a delete conditional on an older updatedAt cannot remove a just-restored session.
      const touched = await store.update('upd', {});
      if (!(touched.updatedAt > partial.updatedAt))
        violation(`an empty update did not move updatedAt: ${partial.updatedAt} → ${touched.updatedAt}`);
      expect({ ...touched, updatedAt: partial.updatedAt }).toEqual(partial);
      expect((await store.load('upd')).summary).toEqual(touched);
      await expectCode(store.update('absent', { title: 'x' }), 'NOT_FOUND', 'update of an absent session');
    },
  },
  {
    group: 'update',
    name: 'an INVALID patch changes nothing, in storage or in what load and list return',
    async run(ctx) {
      const store = await ctx.open();
      await materialize(store, 'strict');
      await store.update('strict', { title: 'kept', tags: ['kept'] });
      const before = (await store.load('strict')).summary;
      const patches: unknown[] = [
        { title: 5 },
        { tags: 'x' },
        { tags: [1] },
        { attrs: [] },
        { attrs: { x: 1n } },
        { bogus: 1 },
        { title: 'changed', tags: 'not an array' },
        { title: 'x'.repeat(5000) },
        null,
      ];
      for (const patch of patches) {
        await expectCode(
          store.update('strict', patch as { title?: string }),
          'INVALID',
          `patch ${describeError(patch)}`,
        );
      }
      expect((await store.load('strict')).summary).toEqual(before);
      expect((await store.list()).sessions[0]).toEqual(before);
    },
  },
  {
    group: 'update',
    name: 'update of a pending session returns a summary, stays invisible, and is written with the first batch',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'pending-upd', cwd: '/p', title: 'from create' });
      const summary = await store.update('pending-upd', { title: 'from update', attrs: { a: 1 } });
      expect(summary).toMatchObject({
        id: 'pending-upd',
        title: 'from update',
        attrs: { a: 1 },
        eventCount: 0,
        committedSeq: -1,
      });
      await store.update('pending-upd', { tags: ['t'] });
      expect(await store.has('pending-upd')).toBe(false);
      expect((await store.list()).sessions).toEqual([]);
      await expectCode(
        store.update('pending-upd', { title: 5 } as unknown as { title: string }),
        'INVALID',
        'bad patch on pending',
      );
      await store.append('pending-upd', [ev(0, 'user/message', { text: 'q' })]);
      const loaded = await store.load('pending-upd');
      expect(loaded.summary).toMatchObject({
        title: 'from update',
        attrs: { a: 1 },
        tags: ['t'],
        cwd: '/p',
        eventCount: 1,
        firstPrompt: 'q',
      });
      await store.close();
      const reopened = await ctx.reopen(store);
      expect((await reopened.load('pending-upd')).summary).toEqual(loaded.summary);
    },
  },
];
