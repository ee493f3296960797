import { afterEach, describe, expect, it } from 'vitest';
import { events, freshStore, removeTempDirs } from './helpers.js';

afterEach(removeTempDirs);

describe('sqlite smoke', () => {
  it('round trips', async () => {
    const { store } = await freshStore();
    await store.create({ id: 's1', cwd: '/p', title: 't' });
    expect(await store.has('s1')).toBe(false);
    expect(await store.append('s1', events(0, 3, 2))).toEqual({ nextSeq: 3 });
    const loaded = await store.load('s1');
    expect(loaded.events).toEqual(events(0, 3, 2));
    expect(loaded.committedSeq).toBe(1);
    expect(loaded.interrupted).toBe(true);
    expect(loaded.summary.title).toBe('t');
    await store.close();
  });
});
