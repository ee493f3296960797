// Memory's maintenance: verify reports ok or interrupted; repair with tail 'cut' moves the
// interrupted tail to the volume's quarantine.
import { describe, expect, it } from 'vitest';
import { MemoryVolume, openMemoryStore } from '../src/index.js';

const time = '2026-11-29T10:00:00.000Z';
const ev = (seq: number, type = 'note') => ({ seq, type, time, data: seq });

async function storeWithSessions() {
  const volume = new MemoryVolume();
  const store = await openMemoryStore({ volume });
  await store.create({ id: 'done' });
  await store.append('done', [ev(0), ev(1, 'turn/end')]);
  await store.create({ id: 'cut-short' });
  await store.append('cut-short', [ev(0), ev(1, 'turn/end'), ev(2), ev(3)]);
  return { volume, store };
}

describe('memory verify', () => {
  it('reports every session ok or interrupted, with the interrupted tail located', async () => {
    const { store } = await storeWithSessions();
    const report = await store.verify();
    expect(report.checked).toBe(2);
    expect(report.sessions).toEqual([
      {
        sessionId: 'cut-short',
        status: 'interrupted',
        eventCount: 4,
        committedSeq: 1,
        problems: [expect.objectContaining({ kind: 'interrupted', sessionId: 'cut-short', seq: 2 })],
      },
      { sessionId: 'done', status: 'ok', eventCount: 2, committedSeq: 1, problems: [] },
    ]);
    expect(report.problems).toHaveLength(1);
    expect((await store.verify({ id: 'done' })).sessions[0]?.status).toBe('ok');
    await expect(store.verify({ id: 'nope' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('memory repair', () => {
  it('keeps the tail by default and cuts it to the quarantine with tail cut', async () => {
    const { store, volume } = await storeWithSessions();
    expect(await store.repair('cut-short')).toEqual({
      sessionId: 'cut-short',
      eventCount: 4,
      removed: [],
      quarantined: [],
    });
    const report = await store.repair('cut-short', { tail: 'cut' });
    expect(report).toMatchObject({
      eventCount: 2,
      cutEvents: 2,
      quarantined: ['memory:quarantine/cut-short'],
      removed: [{ kind: 'interrupted', seq: 2, quarantinedAt: 'memory:quarantine/cut-short' }],
    });
    expect(volume.quarantine.get('cut-short')?.map((e) => e.seq)).toEqual([2, 3]);
    expect((await store.load('cut-short')).summary).toMatchObject({ eventCount: 2, interrupted: false });
    expect((await store.verify({ id: 'cut-short' })).sessions[0]?.status).toBe('ok');
  });

  it('the fault hook sees the repair read before its write, and a failing write cuts nothing', async () => {
    const volume = new MemoryVolume();
    const steps: string[] = [];
    let failWrite = false;
    const store = await openMemoryStore({
      volume,
      beforeStorageStep: (operation) => {
        steps.push(operation);
        if (failWrite && operation === 'write') throw new Error('disk on fire');
      },
    });
    await store.create({ id: 's' });
    await store.append('s', [ev(0)]);
    steps.length = 0;
    failWrite = true;
    await expect(store.repair('s', { tail: 'cut' })).rejects.toMatchObject({ code: 'IO' });
    expect(steps).toEqual(['read', 'write']);
    expect(volume.quarantine.has('s')).toBe(false);
    expect((await store.load('s')).events).toHaveLength(1);
  });
});

describe('memory options', () => {
  it('rejects an invalid shared option with INVALID naming it', async () => {
    await expect(openMemoryStore({ maxDepth: 0 })).rejects.toThrow(/openMemoryStore: maxDepth/);
  });
});
