import { describe, expect, it } from 'vitest';
import { MemoryVolume, openMemoryStore } from '../src/index.js';

// A misspelt `volume` would otherwise open an empty volume, and every stored session would look
// absent: the factory refuses names it does not know.
describe('memory store options', () => {
  it('refuses an unknown option, naming it', async () => {
    const volume = new MemoryVolume();
    const error = await openMemoryStore({ volumes: volume } as never).then(
      () => undefined,
      (caught: unknown) => caught as { code?: string; message: string },
    );
    expect(error?.code).toBe('INVALID');
    expect(error?.message).toBe(
      'openMemoryStore: unknown option "volumes" (known options: volume, beforeStorageStep, durability, boundaryTypes, maxEventBytes, maxDepth)',
    );
  });

  it('keeps working with every option it knows', async () => {
    const volume = new MemoryVolume();
    const store = await openMemoryStore({ volume, beforeStorageStep: () => {}, durability: 'relaxed' });
    await store.create({ id: 's' });
    await store.append('s', [{ seq: 0, type: 'turn/end', time: '2026-12-01T00:00:00.000Z', data: null }]);
    const again = await openMemoryStore({ volume });
    expect((await again.load('s')).events).toHaveLength(1);
  });
});
