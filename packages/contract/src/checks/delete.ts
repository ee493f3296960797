// delete: removal everywhere, pending reservations, and delete with ifUpdatedAt.
import { expect } from 'vitest';
import { type ContractCheck, collect, ev, evs, expectCode } from '../harness.js';
import { eventsOf, listAll, materialize } from './support.js';

/** The checks of the `delete` group. */
export const deleteChecks: ContractCheck[] = [
  {
    group: 'delete',
    name: 'delete removes a session everywhere; the id can be created again; unknown is NOT_FOUND',
    async run(ctx) {
      const store = await ctx.open();
      await materialize(store, 'gone', evs(0, 3), '/d');
      await materialize(store, 'stays', evs(0, 1), '/d');
      await store.delete('gone');
      expect(await store.has('gone')).toBe(false);
      await expectCode(store.load('gone'), 'NOT_FOUND', 'load after delete');
      await expectCode(() => collect(store.read('gone')), 'NOT_FOUND', 'read after delete');
      await expectCode(store.update('gone', { title: 'x' }), 'NOT_FOUND', 'update after delete');
      await expectCode(store.append('gone', [ev(3)]), 'NOT_FOUND', 'append after delete');
      await expectCode(store.delete('gone'), 'NOT_FOUND', 'second delete');
      await expectCode(store.delete('never'), 'NOT_FOUND', 'delete of an unknown id');
      expect((await listAll(store)).map((s) => s.id)).toEqual(['stays']);
      expect((await listAll(store, '/d')).map((s) => s.id)).toEqual(['stays']);
      await store.create({ id: 'gone' });
      await expectCode(store.append('gone', [ev(3)]), 'CONFLICT', 'a recreated session starts at seq 0');
      expect(await store.append('gone', [ev(0, 'note', { reborn: true })])).toEqual({ nextSeq: 1 });
      const reborn = await store.load('gone');
      expect(reborn.events).toEqual([ev(0, 'note', { reborn: true })]);
      expect(reborn.summary.eventCount).toBe(1);
      await store.close();
      const reopened = await ctx.reopen(store);
      expect(await eventsOf(reopened, 'gone')).toEqual([ev(0, 'note', { reborn: true })]);
      expect(await eventsOf(reopened, 'stays')).toEqual(evs(0, 1));
    },
  },
  {
    group: 'delete',
    name: 'delete of a pending session drops the reservation',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'reserved' });
      await store.delete('reserved');
      await expectCode(
        store.append('reserved', [ev(0)]),
        'NOT_FOUND',
        'append after the pending session was deleted',
      );
      expect(await store.has('reserved')).toBe(false);
      await store.create({ id: 'reserved' });
      expect(await store.append('reserved', [ev(0)])).toEqual({ nextSeq: 1 });
    },
  },
  {
    group: 'delete',
    name: 'delete with ifUpdatedAt removes only that version; a changed session is CONFLICT and stays whole',
    async run(ctx) {
      // A cleanup decides from what it saw; another instance (another process) writes meanwhile.
      const store = await ctx.open();
      const other = await ctx.reopen(store);
      await materialize(store, 's', evs(0, 2), '/d');
      const seen = (await store.load('s')).summary.updatedAt;
      await other.append('s', [ev(2)]);
      await expectCode(
        store.delete('s', { ifUpdatedAt: seen }),
        'CONFLICT',
        'delete of a version appended to since',
      );
      expect(await eventsOf(store, 's')).toEqual([...evs(0, 2), ev(2)]);
      const appended = (await store.load('s')).summary.updatedAt;
      await other.update('s', { title: 'renamed' });
      await expectCode(
        store.delete('s', { ifUpdatedAt: appended }),
        'CONFLICT',
        'delete of a version updated since',
      );
      const kept = await other.load('s');
      expect(kept.events).toEqual([...evs(0, 2), ev(2)]);
      expect(kept.summary.title).toBe('renamed');
      await store.delete('s', { ifUpdatedAt: kept.summary.updatedAt });
      expect(await other.has('s')).toBe(false);
      await expectCode(
        store.delete('s', { ifUpdatedAt: kept.summary.updatedAt }),
        'NOT_FOUND',
        'a second delete',
      );
      await materialize(store, 't', evs(0, 1), '/d');
      await expectCode(
        store.delete('t', { ifUpdatedAt: 'yesterday' }),
        'INVALID',
        'a version that is no timestamp',
      );
      expect(await store.has('t')).toBe(true);
    },
  },
];
