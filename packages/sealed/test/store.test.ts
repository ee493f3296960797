import { describe, expect, it } from 'vitest';
import { isSealedData, isSealedText, SEALED_KEY, sealedFailureOf, sealStore } from '../src/index.js';
import { ev, keyring, memory, oldKeyring, rejection } from './helpers.js';

describe('round trip through a sealed store', () => {
  it('returns every operation in clear and stores only sealed values', async () => {
    const inner = await memory();
    const store = sealStore(inner, { keys: keyring });
    await store.create({ id: 's1', title: 'my title', tags: ['t'] });
    await store.append('s1', [ev(0, 'hello there', 'user/message'), ev(1, { a: [1, 'x'] }, 'turn/end')]);
    await store.update('s1', { attrs: { k: 'v' } });
    const loaded = await store.load('s1');
    expect(loaded.events.map((e) => e.data)).toEqual(['hello there', { a: [1, 'x'] }]);
    expect(loaded.summary).toMatchObject({
      title: 'my title',
      firstPrompt: 'hello there',
      tags: ['t'],
      attrs: { k: 'v' },
    });
    const read = [];
    for await (const e of store.read('s1', { fromSeq: 1 })) read.push(e);
    expect(read).toEqual([ev(1, { a: [1, 'x'] }, 'turn/end')]);
    const page = await store.list();
    expect(page.sessions[0]).toMatchObject({ id: 's1', title: 'my title', firstPrompt: 'hello there' });
    expect(await store.has('s1')).toBe(true);

    const raw = await inner.load('s1');
    expect(raw.events.every((e) => isSealedData(e.data))).toBe(true);
    expect(isSealedText(raw.summary.title!)).toBe(true);
    expect(isSealedText(raw.summary.firstPrompt!)).toBe(true);
    expect(isSealedData(raw.summary.attrs!)).toBe(true);
    expect(raw.summary.tags).toEqual(['t']);

    await store.delete('s1');
    expect(await store.has('s1')).toBe(false);
    await store.close();
    expect((await rejection(store.has('s1'))).code).toBe('CLOSED');
  });

  it('accepts a retry of the same batch (sealing is deterministic)', async () => {
    const store = sealStore(await memory(), { keys: keyring });
    await store.create({ id: 's' });
    const batch = [ev(0), ev(1)];
    await store.append('s', batch);
    await expect(store.append('s', batch)).resolves.toEqual({ nextSeq: 2 });
    expect((await rejection(store.append('s', [ev(0, 'other'), ev(1)]))).code).toBe('CONFLICT');
  });
});

describe('reading damaged or foreign records', () => {
  it('is CORRUPT naming session and seq for plaintext slipped in', async () => {
    const inner = await memory();
    const store = sealStore(inner, { keys: keyring });
    await store.create({ id: 's' });
    await store.append('s', [ev(0)]);
    await inner.append('s', [ev(1, { plain: true })]);
    const error = await rejection(store.load('s'));
    expect(error.code).toBe('CORRUPT');
    expect(error.sessionId).toBe('s');
    expect(error.location).toEqual({ seq: 1 });
    expect(sealedFailureOf(error)).toBe('plaintext');
  });

  it('is CORRUPT for a key the keyring lacks, and an older key still opens', async () => {
    const inner = await memory();
    const old = sealStore(inner, { keys: oldKeyring });
    await old.create({ id: 's' });
    await old.append('s', [ev(0)]);
    const both = sealStore(inner, { keys: keyring });
    expect((await both.load('s')).events[0]!.data).toEqual({ n: 0 });
    await both.append('s', [ev(1)]);
    const raw = await inner.load('s');
    expect(raw.events.map((e) => (e.data as Record<string, string>)[SEALED_KEY]!.split('.')[1])).toEqual([
      'k1',
      'k2',
    ]);
    const error = await rejection(old.load('s'));
    expect(error.code).toBe('CORRUPT');
    expect(error.location).toEqual({ seq: 1 });
    expect(sealedFailureOf(error)).toBe('unknown-key');
  });
});

describe('a store without keys', () => {
  it('lists, reads sealed values and deletes, but refuses to write', async () => {
    const inner = await memory();
    const sealed = sealStore(inner, { keys: keyring });
    await sealed.create({ id: 's', title: 'secret' });
    await sealed.append('s', [ev(0, 'secret words', 'user/message')]);
    const bare = sealStore(inner, { keys: undefined });
    const page = await bare.list();
    expect(isSealedText(page.sessions[0]!.title!)).toBe(true);
    expect(await bare.has('s')).toBe(true);
    const events = [];
    for await (const e of bare.read('s')) events.push(e);
    expect(isSealedData(events[0]!.data)).toBe(true);
    const append = await rejection(bare.append('s', [ev(1)]));
    expect(append.code).toBe('INVALID');
    expect(append.message).toContain('refusing to write plaintext');
    expect((await rejection(bare.update('s', { title: 'x' }))).code).toBe('INVALID');
    expect((await inner.load('s')).events).toHaveLength(1);
    await bare.delete('s');
    expect(await inner.has('s')).toBe(false);
  });
});
