// load: what load, read, list and update hand out are copies.
import { expect } from 'vitest';
import { type ContractCheck, collect, ev } from '../harness.js';

/** The checks of the `load` group. */
export const loadChecks: ContractCheck[] = [
  {
    group: 'load',
    name: 'load, read, list and update return copies: mutating them changes nothing stored',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'copy-out', cwd: '/copy', tags: ['t'] });
      await store.append('copy-out', [ev(0, 'note', { inner: { text: 'original' }, list: [1] })]);
      await store.update('copy-out', { attrs: { k: { v: 1 } } });
      const before = await store.load('copy-out');
      const snapshot = structuredClone(before);
      const mutate = (value: unknown) => {
        const target = value as { inner?: { text: string }; list?: number[] };
        if (target.inner !== undefined) target.inner.text = 'changed';
        target.list?.push(2);
      };
      // Each mutation is followed at once by a fresh read of the same thing, before anything else
      // could invalidate a cache that hands out shared objects.
      mutate(before.events[0]!.data);
      before.events.push(ev(1));
      before.summary.tags!.push('changed');
      (before.summary.attrs!.k as { v: number }).v = 2;
      before.summary.eventCount = 99;
      before.meta.cwd = '/changed';
      const reloaded = await store.load('copy-out');
      expect(reloaded.events, 'events after mutating a loaded copy').toEqual(snapshot.events);
      expect(reloaded.meta, 'meta after mutating a loaded copy').toEqual(snapshot.meta);
      expect(reloaded.summary, 'summary after mutating a loaded copy').toEqual(snapshot.summary);
      const streamed = await collect(store.read('copy-out'));
      mutate(streamed[0]!.data);
      expect(await collect(store.read('copy-out')), 'read after mutating a streamed copy').toEqual(
        snapshot.events,
      );
      const listed = (await store.list()).sessions[0]!;
      listed.tags!.push('changed');
      (listed.attrs!.k as { v: number }).v = 3;
      expect((await store.list()).sessions[0], 'list after mutating a listed copy').toEqual(snapshot.summary);
      const updated = await store.update('copy-out', { title: 'title' });
      const updatedSnapshot = structuredClone(updated);
      updated.tags!.push('changed');
      (updated.attrs!.k as { v: number }).v = 4;
      expect((await store.load('copy-out')).summary, 'summary after mutating what update returned').toEqual(
        updatedSnapshot,
      );
      expect((await store.load('copy-out')).events).toEqual(snapshot.events);
    },
  },
];
