import { describe, expect, it } from 'vitest';
import { REDACTIONS_ATTR, sealStore } from '../src/index.js';
import { ev, keyring, memory, tiny } from './helpers.js';

describe('redaction before sealing', () => {
  it('redacts data, title, firstPrompt and attrs and keeps the counts in the sealed attrs', async () => {
    const inner = await memory();
    const store = sealStore(inner, { keys: keyring, redact: tiny });
    await store.create({ id: 'r', title: 'about SECRET' });
    const result = await store.append('r', [
      ev(0, { text: 'my SECRET and SECRET' }, 'user/message'),
      ev(1, 'clean'),
    ]);
    expect(result).toEqual({ nextSeq: 2, redactions: { tiny: 2 } });
    expect(await store.append('r', [ev(2, 'clean')])).toEqual({ nextSeq: 3 });
    const summary = await store.update('r', { attrs: { note: 'SECRET' } });
    expect(summary.attrs).toEqual({ note: '[redacted:tiny]', [REDACTIONS_ATTR]: { tiny: 4 } });
    const loaded = await store.load('r');
    expect(loaded.events[0]!.data).toEqual({ text: 'my [redacted:tiny] and [redacted:tiny]' });
    expect(loaded.summary.title).toBe('about [redacted:tiny]');
    expect(loaded.summary.firstPrompt).toBe('my [redacted:tiny] and [redacted:tiny]');
    expect(JSON.stringify((await inner.load('r')).summary)).not.toContain('redacted');
  });

  it('with redact: true uses the default patterns; off by default', async () => {
    const secret = `ghp_${'a1B2c3D4e5'.repeat(4).slice(0, 36)}`;
    const on = sealStore(await memory(), { keys: keyring, redact: true });
    await on.create({ id: 'd' });
    const result = await on.append('d', [ev(0, `token ${secret}`)]);
    expect(result.redactions).toBeDefined();
    expect(JSON.stringify((await on.load('d')).events)).not.toContain(secret);
    const off = sealStore(await memory(), { keys: keyring });
    await off.create({ id: 'd' });
    expect(await off.append('d', [ev(0, `token ${secret}`)])).toEqual({ nextSeq: 1 });
    expect((await off.load('d')).events[0]!.data).toBe(`token ${secret}`);
  });
});
