// two instances: two live store instances over the same storage, as two processes would have.
import type { SessionEvent } from '@tidemark/core';
import { expect } from 'vitest';
import { type ContractCheck, ev, evs, expectCode, violation } from '../harness.js';
import { eventsOf, listAll, materialize, openCheckingAfter, tryAppend } from './support.js';

/** The checks of the `two instances` group. */
export const twoInstancesChecks: ContractCheck[] = [
  {
    group: 'two instances',
    name: 'a second live instance sees the first one’s writes and the first sees the second’s',
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.reopen(a);
      await materialize(a, 'shared', [ev(0, 'user/message', { text: 'from a' })], '/s');
      expect(await b.has('shared')).toBe(true);
      expect(await eventsOf(b, 'shared')).toEqual([ev(0, 'user/message', { text: 'from a' })]);
      expect(await b.append('shared', [ev(1, 'note', { from: 'b' })])).toEqual({ nextSeq: 2 });
      await expectCode(
        a.append('shared', [ev(1, 'note', { from: 'a' })]),
        'CONFLICT',
        'a stale writer appending a seq the other wrote',
      );
      expect(await a.append('shared', [ev(2, 'note', { from: 'a' })])).toEqual({ nextSeq: 3 });
      const expected = [
        ev(0, 'user/message', { text: 'from a' }),
        ev(1, 'note', { from: 'b' }),
        ev(2, 'note', { from: 'a' }),
      ];
      expect(await eventsOf(a, 'shared')).toEqual(expected);
      expect(await eventsOf(b, 'shared')).toEqual(expected);
      expect((await b.list()).sessions.map((s) => [s.id, s.eventCount])).toEqual([['shared', 3]]);
      await b.update('shared', { title: 'set by b' });
      expect((await a.load('shared')).summary.title).toBe('set by b');
      await a.delete('shared');
      expect(await b.has('shared')).toBe(false);
    },
  },
  {
    group: 'two instances',
    name: 'two instances appending concurrently: every seq is won by exactly one append, losers get CONFLICT',
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.reopen(a);
      await materialize(a, 'race', [ev(0)]);
      const winners: SessionEvent[] = [ev(0)];
      let attempts = 0;
      while (winners.length < 16) {
        if (++attempts > 200)
          violation('no writer ever won a seq: the store makes no progress under contention');
        const seq = winners.length;
        const batchA = [ev(seq, 'note', { writer: 'a', seq })];
        const batchB = [ev(seq, 'note', { writer: 'b', seq })];
        const [wonA, wonB] = await Promise.all([
          tryAppend(a, 'race', batchA, 'writer a'),
          tryAppend(b, 'race', batchB, 'writer b'),
        ]);
        if (wonA && wonB) violation(`seq ${seq} was won by both writers`);
        if (wonA) winners.push(batchA[0]!);
        if (wonB) winners.push(batchB[0]!);
      }
      for (const store of [a, b]) {
        const events = await eventsOf(store, 'race');
        expect(events.map((e) => e.seq)).toEqual(winners.map((e) => e.seq));
        expect(events).toEqual(winners);
        expect((await store.load('race')).summary.eventCount).toBe(winners.length);
      }
    },
  },
  {
    group: 'two instances',
    name: "a reservation ends when this instance's append lands on the session another instance materialized, not when it is refused",
    async run(ctx) {
      // Instance a reserves an id that instance b then materializes and later deletes.
      const a = await ctx.open();
      const b = await ctx.reopen(a);
      await a.create({ id: 'refused', title: 'from a' });
      await b.create({ id: 'refused', title: 'from b' });
      await b.append('refused', [ev(0, 'note', { writer: 'b' })]);
      await expectCode(
        a.append('refused', [ev(0, 'note', { writer: 'a' })]),
        'CONFLICT',
        "a's append at a seq b stored",
      );
      await b.delete('refused');
      // The refused append changed nothing: a still holds its reservation and its first batch
      // creates the session with a's meta.
      await expectCode(a.create({ id: 'refused' }), 'ALREADY_EXISTS', 'create of an id a still reserves');
      expect(await a.append('refused', [ev(0, 'note', { writer: 'a' })])).toEqual({ nextSeq: 1 });
      expect((await b.load('refused')).summary.title).toBe('from a');

      await a.create({ id: 'landed', title: 'from a' });
      await b.create({ id: 'landed', title: 'from b' });
      await b.append('landed', [ev(0, 'note', { writer: 'b' })]);
      expect(await a.append('landed', [ev(1, 'note', { writer: 'a' })])).toEqual({ nextSeq: 2 });
      await b.delete('landed');
      // a's append landed on b's session, so a's reservation is gone with it.
      await expectCode(
        a.append('landed', [ev(0, 'note', { writer: 'a' })]),
        'NOT_FOUND',
        'append after the session a wrote to was deleted',
      );
      await a.create({ id: 'landed' });
    },
  },
  {
    group: 'two instances',
    name: 'an idempotent retry that succeeds on the session another instance materialized ends the reservation too',
    async run(ctx) {
      // a reserves an id; b materializes it with the very batch a then sends: a's append succeeds
      // (an idempotent retry, nothing written), so a's batch is in the session and its reservation
      // ends exactly as when an append of a's writes.
      const a = await ctx.open();
      const b = await ctx.reopen(a);
      await a.create({ id: 'retried', title: 'from a' });
      await b.create({ id: 'retried', title: 'from b' });
      await b.append('retried', [ev(0), ev(1)]);
      expect(await a.append('retried', [ev(0)])).toEqual({ nextSeq: 2 });
      await b.delete('retried');
      await expectCode(
        a.append('retried', [ev(0)]),
        'NOT_FOUND',
        'append after the session a retried on was deleted',
      );
      await a.create({ id: 'retried' });
    },
  },
  {
    group: 'two instances',
    name: 'a delete refused with CONFLICT (ifUpdatedAt) keeps the reservation of the instance that asked',
    async run(ctx) {
      // a reserves an id that b materializes; a's conditional delete of a version the session never
      // had is refused, and a refused delete changes nothing: a's reservation outlives b's delete.
      const a = await ctx.open();
      const b = await ctx.reopen(a);
      await a.create({ id: 'kept', title: 'from a' });
      await b.create({ id: 'kept', title: 'from b' });
      await b.append('kept', [ev(0, 'note', { writer: 'b' })]);
      await expectCode(
        a.delete('kept', { ifUpdatedAt: '2001-01-01T00:00:00.000Z' }),
        'CONFLICT',
        'delete of a version the session never had',
      );
      expect(await b.has('kept')).toBe(true);
      await b.delete('kept');
      await expectCode(a.create({ id: 'kept' }), 'ALREADY_EXISTS', 'create of an id a still reserves');
      expect(await a.append('kept', [ev(0, 'note', { writer: 'a' })])).toEqual({ nextSeq: 1 });
      expect((await b.load('kept')).summary.title).toBe('from a');
    },
  },
  {
    group: 'two instances',
    name: 'two instances racing the first batch of the same pending id: exactly one materializes',
    async run(ctx) {
      const a = await ctx.open();
      const b = await ctx.reopen(a);
      for (let round = 0; round < 5; round++) {
        const id = `first-${round}`;
        await a.create({ id, title: 'a' });
        await b.create({ id, title: 'b' });
        const batchA = [ev(0, 'note', { writer: 'a' }), ev(1, 'note', { writer: 'a' })];
        const batchB = [ev(0, 'note', { writer: 'b' })];
        const [wonA, wonB] = await Promise.all([
          tryAppend(a, id, batchA, 'writer a'),
          tryAppend(b, id, batchB, 'writer b'),
        ]);
        if (wonA === wonB)
          violation(`round ${round}: ${wonA ? 'both writers' : 'neither writer'} materialized the session`);
        const winner = wonA ? batchA : batchB;
        for (const store of [a, b]) {
          const loaded = await store.load(id);
          expect(loaded.events).toEqual(winner);
          expect(loaded.summary.title).toBe(wonA ? 'a' : 'b');
          expect(loaded.summary.eventCount).toBe(winner.length);
        }
        await expectCode(
          (wonA ? b : a).create({ id }),
          'ALREADY_EXISTS',
          'create by the loser after the race',
        );
        expect((await listAll(a)).filter((s) => s.id === id).length).toBe(1);
      }
    },
  },
  {
    group: 'two instances',
    name: 'append after an event another instance rewrote (delete, then the same length again) is CONFLICT; after its new last event it writes',
    async run(ctx) {
      // Without after, a's append would land: the seq is the stored next seq. Only the event it was
      // planned after tells that the session a looked at is gone.
      const a = await openCheckingAfter(ctx);
      const b = await ctx.reopen(a);
      await materialize(a, 'rewritten', evs(0, 2, 'note', 'a'));
      const seenByA = await eventsOf(a, 'rewritten');
      await b.delete('rewritten');
      await b.create({ id: 'rewritten' });
      await b.append('rewritten', evs(0, 2, 'note', 'b'));
      await expectCode(
        a.append('rewritten', [ev(2, 'note', { from: 'a' })], { after: seenByA[1]! }),
        'CONFLICT',
        'append after the last event a saw, which b deleted and rewrote',
      );
      for (const store of [a, b]) expect(await eventsOf(store, 'rewritten')).toEqual(evs(0, 2, 'note', 'b'));
      const seenNow = await eventsOf(a, 'rewritten');
      expect(await a.append('rewritten', [ev(2, 'note', { from: 'a' })], { after: seenNow[1]! })).toEqual({
        nextSeq: 3,
      });
      expect(await eventsOf(b, 'rewritten')).toEqual([
        ...evs(0, 2, 'note', 'b'),
        ev(2, 'note', { from: 'a' }),
      ]);
    },
  },
];
