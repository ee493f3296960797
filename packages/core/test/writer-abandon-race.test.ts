// abandon() racing with a flush() or close() already waiting: they must settle, not spin.
import { describe, expect, it } from 'vitest';
import { SessionWriter } from '../src/index.js';
import { deferred, faulty, openMemoryStore } from './store-wrappers.js';

const codeOf = (error: unknown) => (error as { code?: string }).code;

describe('SessionWriter.abandon racing with flush and close', () => {
  for (const call of ['flush', 'close'] as const) {
    it(`a ${call}() waiting on an append settles with CLOSED once abandon() hands the rest back`, async () => {
      const store = faulty(await openMemoryStore());
      await store.create({ id: 's' });
      const writer = new SessionWriter(store, 's', { maxBatchEvents: 2, maxDelayMs: 1000 });
      const gate = deferred();
      store.gate = gate.promise;
      for (let i = 0; i < 4; i++) await writer.push({ type: 'note', data: i });
      // The first full batch is in flight; the caller's flush/close waits for all four events.
      const waiting = writer[call]().then(
        () => 'resolved',
        (error: unknown) => codeOf(error),
      );
      const abandoned = writer.abandon();
      store.gate = undefined;
      gate.resolve();
      const left = await abandoned;
      expect(left.map((e) => e.data)).toEqual([2, 3]);
      // Before the fix this never settled: the flush loop spun on microtasks (pump() on a closed
      // writer returns at once), starving timers and I/O, so the whole process hung.
      expect(await waiting).toBe('CLOSED');
      expect((await store.load('s')).events.map((e) => e.data)).toEqual([0, 1]);
    });
  }
});
