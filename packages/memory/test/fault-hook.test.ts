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
    let acknowledged = 1;
    for (const op of ['read', 'write', 'list'] as const) {
      failing = op;
      const results = await Promise.allSettled([
        store.has('s1'),
        store.load('s1'),
        store.list(),
        store.append('s1', [{ seq: acknowledged, type: 'turn/end', time, data: null }]),
      ]);
      const [has, load, list, append] = results;
      if (has.status === 'fulfilled') expect(has.value).toBe(true);
      if (load.status === 'fulfilled') expect(load.value.events.length).toBeGreaterThanOrEqual(acknowledged);
      if (list.status === 'fulfilled') expect(list.value.sessions.map((s) => s.id)).toEqual(['s1']);
      if (append.status === 'fulfilled') acknowledged += 1;
      const rejected = results.filter((r) => r.status === 'rejected');
      expect(rejected.length).toBeGreaterThan(0);
      for (const r of rejected) {
        expect(isTidemarkError(r.reason, 'IO')).toBe(true);
        expect(r.reason.errno).toBe('EIO');
      }
    }
    failing = undefined;
    // read fails every call, write fails the append, list fails only list: one append acknowledged.
    expect(acknowledged).toBe(2);
    expect((await store.load('s1')).events.map((e) => e.seq)).toEqual([0, 1]);
    await expect(store.append('s1', [{ seq: 2, type: 'turn/end', time, data: null }])).resolves.toEqual({
      nextSeq: 3,
    });
  });
});
