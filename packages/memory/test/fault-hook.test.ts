import { isTidemarkError } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { MemoryVolume, openMemoryStore } from '../src/index.js';

// The full contract runs against this backend in packages/contract (it is the reference model).
// Here: the fault hook the harness uses turns a failing storage step into IO, never into absence.
describe('memory beforeStorageStep hook', () => {
  const time = '2026-11-29T10:00:00.000Z';

  it('surfaces a failing step as IO and changes nothing', async () => {
    const volume = new MemoryVolume();
    let failing: string | undefined;
    const store = await openMemoryStore({
      volume,
      beforeStorageStep: (operation) => {
        if (operation === failing) throw Object.assign(new Error('disk on fire'), { code: 'EIO' });
      },
    });
    await store.create({ id: 's1' });
    await store.append('s1', [{ seq: 0, type: 'user/message', time, data: 'hi' }]);
    for (const op of ['read', 'write', 'list'] as const) {
      failing = op;
      const attempts = [
        store.has('s1'),
        store.load('s1'),
        store.list(),
        store.append('s1', [{ seq: 1, type: 'turn/end', time, data: null }]),
      ];
      const results = await Promise.allSettled(attempts);
      for (const result of results) {
        if (result.status === 'fulfilled') {
          // Success is allowed only where the failing step is not on the call's path, and must be true presence.
          if (typeof result.value === 'boolean') expect(result.value).toBe(true);
          continue;
        }
        expect(isTidemarkError(result.reason, 'IO')).toBe(true);
        expect(result.reason.errno).toBe('EIO');
      }
    }
    failing = undefined;
    const loaded = await store.load('s1');
    expect(loaded.events.map((e) => e.seq)).toEqual([0]);
    await expect(store.append('s1', [{ seq: 1, type: 'turn/end', time, data: null }])).resolves.toEqual({
      nextSeq: 2,
    });
  });
});
