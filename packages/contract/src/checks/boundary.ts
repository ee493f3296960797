// boundary: committedSeq and interrupted after boundary events, and load with tail: 'cut'.
import { expect } from 'vitest';
import { type ContractCheck, ev, expectCode } from '../harness.js';
import { eventsOf } from './support.js';

/** The checks of the `boundary` group. */
export const boundaryChecks: ContractCheck[] = [
  {
    group: 'boundary',
    name: 'committedSeq and interrupted follow the last boundary event (turn/end, session/end)',
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'turns' });
      await store.append('turns', [ev(0, 'turn/start'), ev(1, 'user/message', { text: 'hi' })]);
      let loaded = await store.load('turns');
      expect([loaded.committedSeq, loaded.interrupted], 'no boundary yet').toEqual([-1, true]);
      expect([loaded.summary.committedSeq, loaded.summary.interrupted]).toEqual([-1, true]);
      await store.append('turns', [ev(2, 'turn/end'), ev(3, 'tool/call')]);
      loaded = await store.load('turns');
      expect([loaded.committedSeq, loaded.interrupted], 'tail after turn/end').toEqual([2, true]);
      expect([loaded.summary.committedSeq, loaded.summary.interrupted]).toEqual([2, true]);
      await store.append('turns', [ev(4, 'turn/end')]);
      loaded = await store.load('turns');
      expect([loaded.committedSeq, loaded.interrupted], 'closed by turn/end').toEqual([4, false]);
      await store.append('turns', [ev(5, 'user/message'), ev(6, 'session/end')]);
      loaded = await store.load('turns');
      expect([loaded.committedSeq, loaded.interrupted], 'closed by session/end').toEqual([6, false]);
      expect([loaded.summary.committedSeq, loaded.summary.interrupted, loaded.summary.eventCount]).toEqual([
        6,
        false,
        7,
      ]);
      const listed = (await store.list()).sessions[0]!;
      expect([listed.committedSeq, listed.interrupted, listed.eventCount]).toEqual([6, false, 7]);
    },
  },
  {
    group: 'boundary',
    name: 'custom boundaryTypes replace the defaults',
    async run(ctx) {
      const store = await ctx.open({ boundaryTypes: ['step/done'] });
      await store.create({ id: 'custom' });
      await store.append('custom', [ev(0, 'step/start'), ev(1, 'step/done'), ev(2, 'turn/end')]);
      const loaded = await store.load('custom');
      expect([loaded.committedSeq, loaded.interrupted]).toEqual([1, true]);
      expect([loaded.summary.committedSeq, loaded.summary.interrupted]).toEqual([1, true]);
      await store.append('custom', [ev(3, 'step/done')]);
      expect((await store.load('custom')).committedSeq).toBe(3);
      expect((await store.load('custom')).interrupted).toBe(false);
    },
  },
  {
    group: 'boundary',
    name: "tail: 'cut' removes the interrupted tail, reports it, and the log continues from committedSeq + 1",
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'cut' });
      const committed = [ev(0, 'user/message', { text: 'go' }), ev(1, 'tool/call'), ev(2, 'turn/end')];
      await store.append('cut', committed);
      await store.append('cut', [ev(3, 'user/message'), ev(4, 'tool/call')]);
      const kept = await store.load('cut', { tail: 'keep' });
      expect(kept.events.length).toBe(5);
      expect(kept.recovered?.cutEvents ?? 0).toBe(0);
      const cut = await store.load('cut', { tail: 'cut' });
      expect(cut.events).toEqual(committed);
      expect([cut.committedSeq, cut.interrupted]).toEqual([2, false]);
      expect(cut.recovered?.cutEvents).toBe(2);
      expect([cut.summary.eventCount, cut.summary.committedSeq, cut.summary.interrupted]).toEqual([
        3,
        2,
        false,
      ]);
      const again = await store.load('cut', { tail: 'cut' });
      expect(again.events).toEqual(committed);
      expect(again.recovered?.cutEvents ?? 0, 'a second cut has nothing to cut').toBe(0);
      await expectCode(store.append('cut', [ev(5)]), 'CONFLICT', 'append after the cut tail');
      expect(
        await store.append('cut', [ev(3, 'user/message', { text: 'again' }), ev(4, 'turn/end')]),
      ).toEqual({ nextSeq: 5 });
      const after = await store.load('cut');
      expect(after.events).toEqual([
        ...committed,
        ev(3, 'user/message', { text: 'again' }),
        ev(4, 'turn/end'),
      ]);
      expect([after.summary.eventCount, after.summary.committedSeq, after.summary.interrupted]).toEqual([
        5,
        4,
        false,
      ]);
      const listed = (await store.list()).sessions[0]!;
      expect([listed.eventCount, listed.committedSeq, listed.interrupted]).toEqual([5, 4, false]);
    },
  },
  {
    group: 'boundary',
    name: "tail: 'cut' of a log without any boundary leaves an existing, empty session (summary fields kept) that continues from seq 0",
    async run(ctx) {
      const store = await ctx.open();
      await store.create({ id: 'no-boundary', title: 'kept' });
      // The prompt arrives in a later batch than the first, so a backend cannot have it from the header.
      await store.append('no-boundary', [ev(0, 'turn/start')]);
      await store.append('no-boundary', [ev(1, 'user/message', { text: 'a' }), ev(2, 'tool/call')]);
      const cut = await store.load('no-boundary', { tail: 'cut' });
      expect(cut.events).toEqual([]);
      expect([cut.committedSeq, cut.interrupted, cut.recovered?.cutEvents]).toEqual([-1, false, 3]);
      // A cut changes the counts and commit state only: the title and the prompt the user already
      // saw stay, as in the reference model.
      expect(cut.summary).toMatchObject({
        eventCount: 0,
        committedSeq: -1,
        interrupted: false,
        title: 'kept',
        firstPrompt: 'a',
      });
      expect((await store.list()).sessions[0]).toMatchObject({
        eventCount: 0,
        title: 'kept',
        firstPrompt: 'a',
      });
      expect(await store.has('no-boundary')).toBe(true);
      expect(await store.append('no-boundary', [ev(0, 'turn/end')])).toEqual({ nextSeq: 1 });
      expect(await eventsOf(store, 'no-boundary')).toEqual([ev(0, 'turn/end')]);
    },
  },
];
