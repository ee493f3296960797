import { describe, expect, it } from 'vitest';
import { openMemoryStore } from '../src/index.js';

describe('memory smoke', () => {
  it('round trips', async () => {
    const store = await openMemoryStore();
    const meta = await store.create({ id: 's1', cwd: '/p' });
    expect(meta.id).toBe('s1');
    expect(await store.has('s1')).toBe(false);
    await store.append('s1', [{ seq: 0, type: 'user/message', time: new Date().toISOString(), data: { text: 'hi' } }]);
    expect(await store.has('s1')).toBe(true);
    const loaded = await store.load('s1');
    expect(loaded.summary.firstPrompt).toBe('hi');
    expect(loaded.interrupted).toBe(true);
  });
});
