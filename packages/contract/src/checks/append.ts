// append: the seq rules, atomic rejection of a bad batch, idempotent retry and copy on append.
import type { SessionEvent } from '@tidemark/core';
import { expect } from 'vitest';
import { type ContractCheck, collect, ev, evs, expectCode } from '../harness.js';
import { eventsOf, materialize, nested } from './support.js';

/** The checks of the `append` group. */
export const appendChecks: ContractCheck[] = [
  {
    group: 'append',
    name: 'seq behind or ahead is CONFLICT, gap inside a batch or empty batch is INVALID, unknown id NOT_FOUND; nothing changes',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'seq' });
      await expectCode(store.append('seq', [ev(1)]), 'CONFLICT', 'first batch starting at 1');
      expect(await store.has('seq')).toBe(false);
      expect(await store.append('seq', evs(0, 2))).toEqual({ nextSeq: 2 });
      await expectCode(
        store.append('seq', evs(1, 2, 'note', 'other')),
        'CONFLICT',
        'batch 1..2 overlapping the stored 0..1',
      );
      await expectCode(
        store.append('seq', [ev(0, 'note', { other: true })]),
        'CONFLICT',
        'different event behind',
      );
      await expectCode(store.append('seq', [ev(3)]), 'CONFLICT', 'batch ahead (3 when next is 2)');
      await expectCode(store.append('seq', [ev(2), ev(4)]), 'INVALID', 'gap inside the batch');
      await expectCode(store.append('seq', [ev(2), ev(2)]), 'INVALID', 'repeated seq inside the batch');
      await expectCode(store.append('seq', [ev(3), ev(2)]), 'INVALID', 'descending seqs inside the batch');
      await expectCode(store.append('seq', []), 'INVALID', 'empty batch');
      await expectCode(
        store.append('never-created', [ev(0)]),
        'NOT_FOUND',
        'append to an id neither created nor stored',
      );
      expect(await store.has('never-created')).toBe(false);
      expect(await eventsOf(store, 'seq')).toEqual(evs(0, 2));
      expect(await store.append('seq', [ev(2)])).toEqual({ nextSeq: 3 });
      expect((await store.load('seq')).summary.eventCount).toBe(3);
    },
  },
  {
    group: 'append',
    name: 'a batch with one bad event is rejected whole, with the path named, and the same seq then works',
    async run(ctx) {
      const store = await ctx.open({ maxEventBytes: 4096 });
      await materialize(store, 'atomic', evs(0, 2));
      const circular: Record<string, unknown> = { a: 1 };
      circular.self = circular;
      const bad: Array<[string, unknown, string]> = [
        ['BigInt', { x: 1n }, 'events[2].data'],
        ['NaN', { x: Number.NaN }, 'events[2].data'],
        ['Infinity', [Number.POSITIVE_INFINITY], 'events[2].data'],
        ['undefined', { x: undefined }, 'events[2].data'],
        ['Date', { when: new Date(0) }, 'events[2].data'],
        ['Map', new Map(), 'events[2].data'],
        ['function', { f: () => 1 }, 'events[2].data'],
        ['circular', circular, 'events[2].data'],
        ['too deep', nested(300, 1), 'events[2].data'],
        ['too large', { text: 'x'.repeat(5000) }, 'events[2]'],
      ];
      for (const [name, data, path] of bad) {
        const batch = [ev(2), ev(3), { seq: 4, type: 'note', time: ev(4).time, data }] as SessionEvent[];
        await expectCode(
          store.append('atomic', batch),
          'INVALID',
          `batch whose third event holds ${name}`,
          path,
        );
        expect(await eventsOf(store, 'atomic'), `after the rejected ${name} batch`).toEqual(evs(0, 2));
      }
      for (const [name, event] of [
        ['missing time', { seq: 2, type: 'note', data: 1 }],
        ['bad time', { seq: 2, type: 'note', time: 'yesterday', data: 1 }],
        ['empty type', { seq: 2, type: '', time: ev(2).time, data: 1 }],
        ['negative seq', { seq: -1, type: 'note', time: ev(2).time, data: 1 }],
        ['fractional seq', { seq: 2.5, type: 'note', time: ev(2).time, data: 1 }],
        ['extra field', { ...ev(2), extra: 1 }],
        ['missing data', { seq: 2, type: 'note', time: ev(2).time }],
        ['not an object', 'event'],
      ] as const) {
        await expectCode(
          store.append('atomic', [event as unknown as SessionEvent]),
          'INVALID',
          `event with ${name}`,
        );
      }
      expect(await store.append('atomic', evs(2, 3))).toEqual({ nextSeq: 5 });
      expect(await eventsOf(store, 'atomic')).toEqual([...evs(0, 2), ...evs(2, 3)]);
      expect((await store.load('atomic')).summary.eventCount).toBe(5);
    },
  },
  {
    group: 'append',
    name: 'a rejected first batch leaves the session pending and invisible',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'first-bad' });
      await expectCode(
        store.append('first-bad', [ev(0), { ...ev(1), data: { x: 1n } } as unknown as SessionEvent]),
        'INVALID',
        'first batch with a BigInt',
        'events[1].data',
      );
      expect(await store.has('first-bad')).toBe(false);
      expect((await store.list()).sessions).toEqual([]);
      expect(await store.append('first-bad', evs(0, 2))).toEqual({ nextSeq: 2 });
      expect(await eventsOf(store, 'first-bad')).toEqual(evs(0, 2));
    },
  },
  {
    group: 'append',
    name: 'idempotent retry: a stored batch again succeeds without duplicates; different events are CONFLICT',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'retry' });
      const first = evs(0, 2);
      const second = [ev(2, 'note', { a: 1, b: [1, 2], c: { d: 'e' } }), ev(3), ev(4, 'turn/end')];
      expect(await store.append('retry', first)).toEqual({ nextSeq: 2 });
      expect(await store.append('retry', first), 'retry of the first batch').toEqual({ nextSeq: 2 });
      expect(await store.append('retry', second)).toEqual({ nextSeq: 5 });
      expect(await store.append('retry', first), 'late retry of the first batch').toEqual({ nextSeq: 5 });
      expect(await store.append('retry', second), 'retry of the second batch').toEqual({ nextSeq: 5 });
      expect(await store.append('retry', [ev(3)]), 'retry of a stored sub-range').toEqual({ nextSeq: 5 });
      // Deep equality, not textual: key order inside data does not make a retry different.
      const reordered = [{ ...ev(2, 'note', { c: { d: 'e' }, b: [1, 2], a: 1 }) }];
      expect(await store.append('retry', reordered), 'retry with data keys in another order').toEqual({
        nextSeq: 5,
      });
      await expectCode(
        store.append('retry', [ev(1, 'note', { different: true })]),
        'CONFLICT',
        'different data at a stored seq',
      );
      await expectCode(
        store.append('retry', [ev(1, 'other-type', { n: 1, tag: 'x' })]),
        'CONFLICT',
        'different type at a stored seq',
      );
      await expectCode(
        store.append('retry', [{ ...ev(1), data: { n: 1, tag: 'x' }, time: ev(99).time }]),
        'CONFLICT',
        'different time',
      );
      await expectCode(
        store.append('retry', [...evs(0, 1, 'note', 'x'), ev(1, 'note', { n: 1, tag: 'y' })]),
        'CONFLICT',
        'partly different',
      );
      const loaded = await store.load('retry');
      expect(loaded.events).toEqual([...first, ...second]);
      expect(loaded.summary.eventCount).toBe(5);
      expect(loaded.committedSeq).toBe(4);
    },
  },
  {
    group: 'append',
    name: 'append copies the batch: later mutation of the caller objects changes nothing stored',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'copy-in' });
      const data = { list: [1, 2], inner: { text: 'original' } };
      const event: SessionEvent = { seq: 0, type: 'note', time: ev(0).time, data };
      const batch = [event];
      const appended = store.append('copy-in', batch);
      // Mutate before and after the promise settles: the batch is copied at call time.
      data.list.push(3);
      data.inner.text = 'changed';
      event.type = 'mutated';
      batch.push(ev(1));
      await appended;
      event.seq = 7;
      const expected = [
        { seq: 0, type: 'note', time: ev(0).time, data: { list: [1, 2], inner: { text: 'original' } } },
      ];
      expect(await eventsOf(store, 'copy-in')).toEqual(expected);
      expect(await collect(store.read('copy-in'))).toEqual(expected);
    },
  },
];
