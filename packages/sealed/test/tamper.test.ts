import { type SessionEvent, type SessionStore, TidemarkError } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { describe, expect, it } from 'vitest';
import { SEALED_KEY, type SealedFailure, sealedFailureOf, sealStore } from '../src/index.js';
import { ev, keyring } from './helpers.js';

// Tampering is built by writing through the inner store directly: the sealed records of a
// session `src` are copied, changed, into a session `s` of the same inner store.

async function sealedRecords(inner: SessionStore, id = 'src'): Promise<SessionEvent[]> {
  const store = sealStore(inner, { keys: keyring });
  await store.create({ id });
  // One event a batch: each record sealed on its own (ts1); batches sealed as one are in batch.test.ts.
  await store.append(id, [ev(0, { a: 'zero' })]);
  await store.append(id, [ev(1, { a: 'one' })]);
  await store.append(id, [ev(2, { a: 'two' }, 'turn/end')]);
  return (await inner.load(id)).events;
}

async function expectCorrupt(inner: SessionStore, id: string, seq: number, failure: SealedFailure) {
  const store = sealStore(inner, { keys: keyring });
  for (const attempt of [
    () => store.load(id),
    async () => {
      for await (const _ of store.read(id)) void _;
    },
  ]) {
    const error = await attempt().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TidemarkError);
    const typed = error as TidemarkError;
    expect(typed.code).toBe('CORRUPT');
    expect(typed.sessionId).toBe(id);
    expect(typed.location?.seq).toBe(seq);
    expect(typed.message).toContain(`session ${id} seq ${seq}`);
    expect(sealedFailureOf(typed)).toBe(failure);
  }
  // The store stays writable for other sessions.
  await store.create({ id: `after-${id}` });
  await expect(store.append(`after-${id}`, [ev(0)])).resolves.toEqual({ nextSeq: 1 });
}

function token(event: SessionEvent): string {
  return (event.data as Record<string, string>)[SEALED_KEY]!;
}
function withToken(event: SessionEvent, text: string): SessionEvent {
  return { ...event, data: { [SEALED_KEY]: text } };
}
function flipBit(text: string, index: number, bit: number): string {
  return (
    text.slice(0, index) + String.fromCharCode(text.charCodeAt(index) ^ (1 << bit)) + text.slice(index + 1)
  );
}

async function planted(events: SessionEvent[]): Promise<SessionStore> {
  const inner = await openMemoryStore();
  await inner.create({ id: 's' });
  await inner.append('s', events);
  return inner;
}

describe('tampered records read as CORRUPT with session and seq', () => {
  it('a flipped bit of the ciphertext', async () => {
    const [e0, e1, e2] = await sealedRecords(await openMemoryStore(), 's');
    const t = token(e1!);
    const inner = await planted([e0!, withToken(e1!, flipBit(t, t.length - 5, 0)), e2!]);
    await expectCorrupt(inner, 's', 1, 'tampered');
  });

  it('two records with their seqs swapped', async () => {
    const inner = await openMemoryStore();
    const [e0, e1, e2] = await sealedRecords(inner);
    await inner.create({ id: 's' });
    await inner.append('s', [{ ...e1!, seq: 0 }, { ...e0!, seq: 1 }, e2!]);
    await expectCorrupt(inner, 's', 0, 'tampered');
  });

  it('a record moved to another session', async () => {
    const src = await openMemoryStore();
    const events = await sealedRecords(src);
    await expectCorrupt(await planted(events), 's', 0, 'tampered');
  });

  it('a changed type or time', async () => {
    const inner = await openMemoryStore();
    const [e0] = await sealedRecords(inner, 's');
    const other = await planted([{ ...e0!, type: 'tool/result' }]);
    await expectCorrupt(other, 's', 0, 'tampered');
    await expectCorrupt(await planted([{ ...e0!, time: '2026-12-02T12:00:00.001Z' }]), 's', 0, 'tampered');
  });

  it('plaintext data slipped in', async () => {
    await expectCorrupt(await planted([ev(0, { text: 'plain' })]), 's', 0, 'plaintext');
    await expectCorrupt(await planted([ev(0, 'plain')]), 's', 0, 'plaintext');
  });

  it('a key id the keyring lacks', async () => {
    const inner = await openMemoryStore();
    const [e0] = await sealedRecords(inner, 's');
    const t = token(e0!).replace('.k2.', '.k9.');
    await expectCorrupt(await planted([withToken(e0!, t)]), 's', 0, 'unknown-key');
  });

  it('a malformed envelope', async () => {
    const inner = await openMemoryStore();
    const [e0] = await sealedRecords(inner, 's');
    const t = token(e0!);
    const bads: SessionEvent[] = [
      withToken(e0!, 'ts1.k2.nope'),
      withToken(e0!, `ts2${t.slice(3)}`),
      withToken(e0!, `${t}=`),
      { ...e0!, data: { [SEALED_KEY]: 7 } },
      { ...e0!, data: { [SEALED_KEY]: t, extra: 1 } },
    ];
    for (const bad of bads) {
      await expectCorrupt(await planted([bad]), 's', 0, 'malformed');
    }
  });
});

describe('sealed summary fields', () => {
  it('are CORRUPT with location.field when tampered, and listed as problems', async () => {
    const inner = await openMemoryStore();
    const store = sealStore(inner, { keys: keyring });
    await store.create({ id: 'a', title: 'title a' });
    await store.append('a', [ev(0, 'prompt a', 'user/message')]);
    await store.update('a', { attrs: { x: 1 } });
    await store.create({ id: 'b', title: 'title b' });
    await store.append('b', [ev(0)]);
    const a = (await inner.load('a')).summary;
    // b's sealed title moved to a: bound to session b, it fails.
    const bTitle = (await inner.load('b')).summary.title!;
    await inner.update('a', { title: bTitle });
    const error = await store.load('a').catch((e: TidemarkError) => e);
    expect(error).toMatchObject({ code: 'CORRUPT', sessionId: 'a', location: { field: 'title' } });
    const page = await store.list();
    expect(page.sessions.map((s) => s.id)).toEqual(['b']);
    expect(page.problems.map((p) => [p.id, p.error.location?.field])).toEqual([['a', 'title']]);
    await inner.update('a', { title: a.title!, firstPrompt: 'plain prompt' });
    await expect(store.load('a')).rejects.toMatchObject({
      code: 'CORRUPT',
      location: { field: 'firstPrompt' },
    });
    await inner.update('a', { firstPrompt: a.firstPrompt!, attrs: { x: 1 } });
    await expect(store.load('a')).rejects.toMatchObject({ code: 'CORRUPT', location: { field: 'attrs' } });
    await inner.update('a', { attrs: a.attrs! });
    await expect(store.load('a')).resolves.toMatchObject({ summary: { title: 'title a', attrs: { x: 1 } } });
  });
});

describe('verify on a sealed store', () => {
  it('reports a record that does not open as corrupt with its seq, read-only', async () => {
    const inner = await openMemoryStore();
    const [e0, e1] = await sealedRecords(await openMemoryStore(), 's');
    await inner.create({ id: 's' });
    await inner.append('s', [e0!, { ...e1!, type: 'changed' }]);
    const store = sealStore(inner, { keys: keyring });
    await store.create({ id: 'fine' });
    await store.append('fine', [ev(0)]);
    const before = (await inner.load('s')).summary.updatedAt;
    const report = await store.verify();
    const s = report.sessions.find((h) => h.sessionId === 's');
    expect(s?.status).toBe('corrupt');
    expect(s?.problems.filter((p) => p.kind === 'corrupt')).toMatchObject([{ sessionId: 's', seq: 1 }]);
    expect(report.problems.filter((p) => p.kind === 'corrupt').map((p) => p.sessionId)).toEqual(['s']);
    expect((await inner.load('s')).summary.updatedAt).toBe(before);
    const bare = await sealStore(inner, { keys: undefined }).verify({ id: 's' });
    expect(bare.sessions[0]!.status).toBe('interrupted');
  });
});
