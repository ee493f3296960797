// append after a known event (contract §4.2): `append(id, events, { after })` lands only when the
// stored event at after.seq is after. Each check is skipped, with the reason, for a store that does
// not claim capabilities.appendAfter (it may ignore the option).
import type { AppendOptions, SessionEvent } from '@tidemark/core';
import { expect } from 'vitest';
import { type ContractCheck, ev, eventTime, evs, expectCode } from '../harness.js';
import { eventsOf, materialize, openCheckingAfter } from './support.js';

/** `event` changed in its data, its type or its time: a different event at the same seq. */
function changedVersions(event: SessionEvent): Array<[string, SessionEvent]> {
  return [
    ['different data', { ...event, data: { rewritten: true } }],
    ['a different type', { ...event, type: 'rewritten' }],
    ['a different time', { ...event, time: eventTime(987_654) }],
  ];
}

/** The checks of `append(…, { after })`, in the `append` group. */
export const appendAfterChecks: ContractCheck[] = [
  {
    group: 'append',
    name: 'append after the stored last event writes; after a different event at that seq (data, type or time) is CONFLICT and writes nothing',
    async run(ctx) {
      const store = await openCheckingAfter(ctx);
      await materialize(store, 'after', evs(0, 2));
      const stored = await eventsOf(store, 'after');
      expect(await store.append('after', [ev(2)], { after: stored[1]! })).toEqual({ nextSeq: 3 });
      const last = (await eventsOf(store, 'after'))[2]!;
      for (const [what, stale] of changedVersions(last)) {
        await expectCode(
          store.append('after', [ev(3)], { after: stale }),
          'CONFLICT',
          `append after an event with ${what} than the stored one`,
        );
        expect(await eventsOf(store, 'after'), `after the refused append (${what})`).toEqual([
          ...stored,
          last,
        ]);
      }
      expect((await store.load('after')).summary.eventCount).toBe(3);
      // Deep equality, as for a retry: key order inside data does not make after different.
      const reordered: SessionEvent = { ...ev(3, 'note', { b: [1, 2], a: 'x' }) };
      expect(await store.append('after', [reordered], { after: last })).toEqual({ nextSeq: 4 });
      const options: AppendOptions = { after: { ...reordered, data: { a: 'x', b: [1, 2] } } };
      expect(await store.append('after', [ev(4)], options), 'after with data keys in another order').toEqual({
        nextSeq: 5,
      });
      expect((await eventsOf(store, 'after')).map((e) => e.seq)).toEqual([0, 1, 2, 3, 4]);
    },
  },
  {
    group: 'append',
    name: 'append after an event beyond the stored end, or on a pending session, is CONFLICT; nothing changes',
    async run(ctx) {
      const store = await openCheckingAfter(ctx);
      await materialize(store, 'short', evs(0, 2));
      await expectCode(
        store.append('short', [ev(5)], { after: ev(4) }),
        'CONFLICT',
        'after an event at seq 4 of 0..1',
      );
      await expectCode(
        store.append('short', [ev(3)], { after: ev(2) }),
        'CONFLICT',
        'after the next seq itself',
      );
      expect(await eventsOf(store, 'short')).toEqual(evs(0, 2));
      await store.create({ id: 'pending', title: 'kept' });
      await expectCode(
        store.append('pending', [ev(1)], { after: ev(0) }),
        'CONFLICT',
        'after an event of a session whose first batch has not landed',
      );
      expect(await store.has('pending')).toBe(false);
      // The refused append kept the reservation: the first batch lands with create's meta.
      expect(await store.append('pending', evs(0, 2))).toEqual({ nextSeq: 2 });
      expect((await store.load('pending')).summary.title).toBe('kept');
      await expectCode(
        store.append('never-created', [ev(1)], { after: ev(0) }),
        'NOT_FOUND',
        'append after on an id neither created nor stored',
      );
    },
  },
  {
    group: 'append',
    name: 'idempotent retry with after: the stored batch again with its after succeeds once; with another after it is CONFLICT',
    async run(ctx) {
      const store = await openCheckingAfter(ctx);
      const first = evs(0, 2);
      const second = [ev(2, 'note', { a: 1 }), ev(3, 'turn/end')];
      await materialize(store, 'retry-after', first);
      expect(await store.append('retry-after', second, { after: first[1]! })).toEqual({ nextSeq: 4 });
      expect(await store.append('retry-after', second, { after: first[1]! }), 'retry with after').toEqual({
        nextSeq: 4,
      });
      expect(
        await store.append('retry-after', [second[1]!], { after: second[0]! }),
        'sub-range retry',
      ).toEqual({
        nextSeq: 4,
      });
      for (const [what, stale] of changedVersions(first[1]!)) {
        await expectCode(
          store.append('retry-after', second, { after: stale }),
          'CONFLICT',
          `retry of a stored batch after an event with ${what}`,
        );
      }
      const loaded = await store.load('retry-after');
      expect(loaded.events).toEqual([...first, ...second]);
      expect(loaded.summary.eventCount).toBe(4);
    },
  },
  {
    group: 'append',
    name: 'append after an event that is not right before the batch, or that is no event, is INVALID naming options.after; nothing changes',
    async run(ctx) {
      const store = await openCheckingAfter(ctx);
      await materialize(store, 'after-seq', evs(0, 2));
      for (const seq of [0, 2, 3]) {
        await expectCode(
          store.append('after-seq', [ev(2)], { after: ev(seq) }),
          'INVALID',
          `a batch at seq 2 after the event at seq ${seq}`,
          'options.after',
        );
      }
      const notEvents: unknown[] = ['event', { seq: 1, type: 'note' }, { ...ev(1), extra: true }];
      for (const after of notEvents) {
        await expectCode(
          store.append('after-seq', [ev(2)], { after } as AppendOptions),
          'INVALID',
          `after ${JSON.stringify(after)}`,
          'options.after',
        );
      }
      await expectCode(
        store.append('after-seq', [ev(2)], 'after' as AppendOptions),
        'INVALID',
        'options that are not an object',
      );
      expect(await eventsOf(store, 'after-seq')).toEqual(evs(0, 2));
      // A first batch has nothing before it: INVALID before the (pending) session is looked at.
      await store.create({ id: 'after-first' });
      await expectCode(
        store.append('after-first', [ev(0)], { after: ev(0) }),
        'INVALID',
        'a batch at seq 0 with after',
      );
      expect(await store.has('after-first')).toBe(false);
      expect(
        await store.append('after-seq', [ev(2)], { after: (await eventsOf(store, 'after-seq'))[1]! }),
      ).toEqual({
        nextSeq: 3,
      });
    },
  },
];
