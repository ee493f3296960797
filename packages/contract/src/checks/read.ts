// read: order, ranges, early exit and the errors of read.
import { expect } from 'vitest';
import { type ContractCheck, collect, ev, evs, expectCode } from '../harness.js';

/** The checks of the `read` group. */
export const readChecks: ContractCheck[] = [
  {
    group: 'read',
    name: 'read streams events in order, honours ranges, and is NOT_FOUND for an absent session',
    async run(ctx) {
      const store = await ctx.open();
      const all = evs(0, 12);
      await store.create({ id: 'stream' });
      await store.append('stream', all.slice(0, 5));
      await store.append('stream', all.slice(5));
      expect(await collect(store.read('stream'))).toEqual(all);
      expect(await collect(store.read('stream', {}))).toEqual(all);
      expect(await collect(store.read('stream', { fromSeq: 3, toSeq: 7 }))).toEqual(all.slice(3, 8));
      expect(await collect(store.read('stream', { fromSeq: 9 }))).toEqual(all.slice(9));
      expect(await collect(store.read('stream', { toSeq: 2 }))).toEqual(all.slice(0, 3));
      expect(await collect(store.read('stream', { fromSeq: 4, toSeq: 4 }))).toEqual([all[4]]);
      expect(await collect(store.read('stream', { fromSeq: 12 }))).toEqual([]);
      expect(await collect(store.read('stream', { fromSeq: 5, toSeq: 2 }))).toEqual([]);
      await expectCode(() => collect(store.read('absent')), 'NOT_FOUND', 'read of an absent session');
      await expectCode(() => collect(store.read('stream', { fromSeq: -1 })), 'INVALID', 'read from seq -1');
      await expectCode(() => collect(store.read('stream', { toSeq: 1.5 })), 'INVALID', 'read to seq 1.5');
      // Only the newest events of the range, in seq order.
      expect(await collect(store.read('stream', { last: 1 }))).toEqual([all[11]]);
      expect(await collect(store.read('stream', { last: 4 }))).toEqual(all.slice(8));
      expect(await collect(store.read('stream', { last: 50 }))).toEqual(all);
      expect(await collect(store.read('stream', { toSeq: 6, last: 3 }))).toEqual(all.slice(4, 7));
      expect(await collect(store.read('stream', { fromSeq: 10, last: 5 }))).toEqual(all.slice(10));
      expect(await collect(store.read('stream', { fromSeq: 5, toSeq: 2, last: 2 }))).toEqual([]);
      await expectCode(
        () => collect(store.read('absent', { last: 1 })),
        'NOT_FOUND',
        'read last of an absent session',
      );
      await expectCode(() => collect(store.read('stream', { last: 0 })), 'INVALID', 'read of the last 0');
      await expectCode(() => collect(store.read('stream', { last: 1.5 })), 'INVALID', 'read of the last 1.5');
      // Early exit from a for-await must not break the store.
      for await (const event of store.read('stream')) if (event.seq === 2) break;
      expect(await store.append('stream', [ev(12)])).toEqual({ nextSeq: 13 });
    },
  },
];
