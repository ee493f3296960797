// one instance: concurrent calls on one store instance.
import type { SessionEvent } from '@tidemark/core';
import { expect } from 'vitest';
import { type ContractCheck, collect, ev, evs, violation } from '../harness.js';
import { eventsOf, listAll, materialize, tryAppend } from './support.js';

/** The checks of the `one instance` group. */
export const oneInstanceChecks: ContractCheck[] = [
  {
    group: 'one instance',
    name: 'concurrent appends to one session from one instance: each seq is won once, the rest get CONFLICT',
    async run(ctx) {
      const store = await ctx.open();
      await materialize(store, 'busy', [ev(0)]);
      const winners: SessionEvent[] = [ev(0)];
      for (let round = 0; round < 8; round++) {
        const seq = winners.length;
        const batches = [0, 1, 2].map((writer) => [
          ev(seq, 'note', { writer, seq }),
          ev(seq + 1, 'note', { writer, seq }),
        ]);
        const won = await Promise.all(
          batches.map((batch, writer) => tryAppend(store, 'busy', batch, `writer ${writer}`)),
        );
        const count = won.filter(Boolean).length;
        if (count !== 1)
          violation(`round ${round}: ${count} of 3 concurrent appends at seq ${seq} succeeded`);
        winners.push(...batches[won.indexOf(true)]!);
      }
      expect(await eventsOf(store, 'busy')).toEqual(winners);
      expect((await store.load('busy')).summary.eventCount).toBe(winners.length);
      expect(await collect(store.read('busy'))).toEqual(winners);
    },
  },
  {
    group: 'one instance',
    name: 'concurrent operations on different sessions of one instance all land',
    async run(ctx) {
      const store = await ctx.open();
      const ids = Array.from({ length: 12 }, (_, i) => `many-${i}`);
      await Promise.all(ids.map((id, i) => store.create({ id, cwd: i % 2 === 0 ? '/even' : '/odd' })));
      await Promise.all(ids.map((id) => store.append(id, evs(0, 2, 'note', id))));
      await Promise.all(ids.map((id) => store.append(id, [ev(2, 'turn/end')])));
      await Promise.all(ids.map((id, i) => store.update(id, { title: `title ${i}` })));
      const loaded = await Promise.all(ids.map((id) => store.load(id)));
      loaded.forEach((session, i) => {
        expect(session.events).toEqual([...evs(0, 2, 'note', ids[i]!), ev(2, 'turn/end')]);
        expect(session.summary).toMatchObject({
          eventCount: 3,
          committedSeq: 2,
          interrupted: false,
          title: `title ${i}`,
        });
      });
      expect((await listAll(store)).length).toBe(ids.length);
      expect((await listAll(store, '/even', 5)).length).toBe(6);
      await Promise.all(ids.slice(0, 6).map((id) => store.delete(id)));
      expect((await listAll(store)).map((s) => s.id).sort()).toEqual(ids.slice(6).sort());
    },
  },
];
