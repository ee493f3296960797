import { MemoryVolume, openMemoryStore } from '@tidemark/memory';
import { describe, expect, it } from 'vitest';
import { isSealedText, sealStore } from '../src/index.js';
import { ev, keyring } from './helpers.js';

describe('firstPrompt derived from the plaintext', () => {
  it('lands with the first batch of a session created here, sealed', async () => {
    const inner = await openMemoryStore();
    const store = sealStore(inner, { keys: keyring });
    await store.create({ id: 'p' });
    await store.append('p', [ev(0, 'note'), ev(1, { text: '  first\n prompt ' }, 'user/message')]);
    const raw = (await inner.load('p')).summary.firstPrompt;
    expect(raw !== undefined && isSealedText(raw)).toBe(true);
    expect((await store.load('p')).summary.firstPrompt).toBe('first prompt');
    await store.append('p', [ev(2, { text: 'second' }, 'user/message')]);
    expect((await store.load('p')).summary.firstPrompt).toBe('first prompt');
  });

  it('is derived in a later batch, and after another instance deleted and re-created the session', async () => {
    const volume = new MemoryVolume();
    const a = sealStore(await openMemoryStore({ volume }), { keys: keyring });
    const b = sealStore(await openMemoryStore({ volume }), { keys: keyring });
    await a.create({ id: 'p' });
    await a.append('p', [ev(0, 'no prompt')]);
    await a.append('p', [ev(1, 'hello', 'user/message')]);
    expect((await a.load('p')).summary.firstPrompt).toBe('hello');
    await b.delete('p');
    await b.create({ id: 'p' });
    await b.append('p', [ev(0, 'no prompt')]);
    await a.append('p', [ev(1, 'again', 'user/message')]);
    expect((await b.load('p')).summary.firstPrompt).toBe('again');
  });

  it('keeps a firstPrompt the caller set', async () => {
    const store = sealStore(await openMemoryStore(), { keys: keyring });
    await store.create({ id: 'p' });
    await store.update('p', { firstPrompt: 'mine' });
    await store.append('p', [ev(0, 'theirs', 'user/message')]);
    expect((await store.load('p')).summary.firstPrompt).toBe('mine');
  });

  it('rejects a title too long to seal with INVALID naming the field', async () => {
    const store = sealStore(await openMemoryStore(), { keys: keyring });
    await store.create({ id: 'p', title: 'x'.repeat(2900) });
    await expect(store.update('p', { title: 'x'.repeat(3100) })).rejects.toMatchObject({
      code: 'INVALID',
      message: expect.stringContaining('title is too long to seal'),
    });
    await expect(store.create({ id: 'q', title: 'é'.repeat(2000) })).rejects.toMatchObject({
      code: 'INVALID',
    });
  });
});
