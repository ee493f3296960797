// append(id, events, { after }) through a sealed store: `after` is handed to the inner store sealed
// (the same bytes as the stored record, sealing being deterministic), and when the inner store
// answers CONFLICT the stored record is opened and compared in plaintext, so that the same event
// sealed under another key (rotation, rekey), with its data's keys in another order, or stored
// unredacted still counts as `after`. A record that does not open is CORRUPT, never written over.
import { join } from 'node:path';
import { type AppendOptions, checksAppendAfter, type SessionEvent, type SessionStore } from '@tidemark/core';
import { openJsonlStore } from '@tidemark/jsonl';
import { openMemoryStore } from '@tidemark/memory';
import { openSqliteStore } from '@tidemark/sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { SEALED_KEY, sealedFailureOf, sealedKeyId, sealStore } from '../src/index.js';
import { Keyring } from '../src/keyring.js';
import { rekeyStore } from '../src/rekey/index.js';
import { removeTempDirs, tempDir } from './backends.js';
import { counted, ev, K1, K2, keyring, oldKeyring, rejection, tiny } from './helpers.js';

const K3 = Buffer.alloc(32, 3).toString('base64');
/** k3 current, k2 and k1 to open: a second rotation after a rekey under k2. */
const ring321 = Keyring.parse(`k3:${K3},k2:${K2},k1:${K1}`);
/** k3 current, k2: what an operator's rekey may seal under while a writer still has only k2 and k1. */
const ring32 = Keyring.parse(`k3:${K3},k2:${K2}`);

// The inner stores under test, each opened fresh.
const opened: SessionStore[] = [];
const backends: Array<[string, () => Promise<SessionStore>]> = [
  ['memory', () => openMemoryStore()],
  ['sqlite', () => openSqliteStore({ path: join(tempDir(), 'after.db') })],
  ['jsonl', () => openJsonlStore({ root: tempDir() })],
];
async function open(make: () => Promise<SessionStore>): Promise<SessionStore> {
  const store = await make();
  opened.push(store);
  return store;
}
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close().catch(() => undefined);
  removeTempDirs();
});

/** `inner` with `capabilities` read from `capabilities()` each time (every other member its own). */
function withCapabilities(inner: SessionStore, capabilities: () => unknown): SessionStore {
  return new Proxy(inner, {
    get(target, key) {
      if (key === 'capabilities') return capabilities();
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
}

/** The raw records of `id`: what the inner store holds. */
async function raw(inner: SessionStore, id: string): Promise<SessionEvent[]> {
  return (await inner.load(id)).events;
}

/** Expects `promise` to be the CONFLICT of a mismatched `after` at `seq`, as core words it. */
async function expectAfterConflict(promise: Promise<unknown>, id: string, seq: number): Promise<void> {
  const error = await rejection(promise);
  expect(error.code).toBe('CONFLICT');
  expect(error.sessionId).toBe(id);
  expect(error.location).toEqual({ seq });
  expect(error.message).toContain(`session ${id}: the append was planned after`);
  expect(error.message).toContain(`seq ${seq}`);
}

describe.each(backends)('append with after over a sealed %s store', (_name, make) => {
  it('writes the batch when after is the stored event (the sealed bytes match: no extra read)', async () => {
    const inner = counted(await open(make));
    const store = sealStore(inner.store, { keys: keyring });
    await store.create({ id: 's' });
    await store.append('s', [ev(0), ev(1, { text: 'one', list: [1, 2] })]);
    const reads = inner.reads();
    await expect(
      store.append('s', [ev(2), ev(3)], { after: ev(1, { text: 'one', list: [1, 2] }) }),
    ).resolves.toEqual({ nextSeq: 4 });
    expect(inner.reads()).toBe(reads);
    expect((await store.load('s')).events.map((e) => e.data)).toEqual([
      { n: 0 },
      { text: 'one', list: [1, 2] },
      { n: 2 },
      { n: 3 },
    ]);
  });

  it('writes the batch when after has its data keys in another order (compared opened)', async () => {
    const inner = await open(make);
    const store = sealStore(inner, { keys: keyring });
    await store.create({ id: 's' });
    await store.append('s', [ev(0, { a: 1, b: { c: 2, d: 3 } })]);
    await expect(store.append('s', [ev(1)], { after: ev(0, { b: { d: 3, c: 2 }, a: 1 }) })).resolves.toEqual({
      nextSeq: 2,
    });
    expect(await raw(inner, 's')).toHaveLength(2);
  });

  it('is CONFLICT naming session and seq, nothing written, when after is not the stored event', async () => {
    const inner = await open(make);
    const store = sealStore(inner, { keys: keyring });
    await store.create({ id: 's' });
    await store.append('s', [ev(0), ev(1, 'one')]);
    const before = await raw(inner, 's');
    const summary = (await inner.load('s')).summary;
    for (const after of [
      ev(1, 'other'),
      ev(1, 'one', 'tool/result'),
      { ...ev(1, 'one'), time: '2026-12-02T12:00:00.001Z' },
    ]) {
      await expectAfterConflict(store.append('s', [ev(2, 'hi', 'user/message')], { after }), 's', 1);
    }
    expect(await raw(inner, 's')).toEqual(before);
    expect((await inner.load('s')).summary).toEqual(summary);
  });

  it('is CONFLICT, nothing written, when another writer appended past after', async () => {
    const inner = await open(make);
    const store = sealStore(inner, { keys: keyring });
    await store.create({ id: 's' });
    await store.append('s', [ev(0), ev(1)]);
    await store.append('s', [ev(2, 'theirs')]);
    const error = await rejection(store.append('s', [ev(2, 'mine')], { after: ev(1) }));
    expect(error.code).toBe('CONFLICT');
    expect((await store.load('s')).events.map((e) => e.data)).toEqual([{ n: 0 }, { n: 1 }, 'theirs']);
  });

  it('answers a retry of a stored batch with the same after as written, and CONFLICT with another after', async () => {
    const inner = await open(make);
    const store = sealStore(inner, { keys: keyring });
    await store.create({ id: 's' });
    await store.append('s', [ev(0)]);
    const batch = [ev(1, { x: 1, y: 2 }), ev(2)];
    await store.append('s', batch, { after: ev(0) });
    await expect(store.append('s', batch, { after: ev(0) })).resolves.toEqual({ nextSeq: 3 });
    // The same retry with its data's keys in another order (opened and compared), and its after's.
    await expect(
      store.append('s', [ev(1, { y: 2, x: 1 }), ev(2)], { after: ev(0, { n: 0 }) }),
    ).resolves.toEqual({ nextSeq: 3 });
    await expectAfterConflict(store.append('s', batch, { after: ev(0, 'not it') }), 's', 0);
    expect(await raw(inner, 's')).toHaveLength(3);
  });

  it('is INVALID as core is for options that are not an object or an after not right before the batch', async () => {
    const inner = await open(make);
    const store = sealStore(inner, { keys: keyring });
    await store.create({ id: 's' });
    await store.append('s', [ev(0)]);
    const bad: unknown[] = [
      'after',
      null,
      [ev(0)],
      { after: ev(1) },
      { after: { ...ev(0), time: 'yesterday' } },
      { after: { seq: 0, type: 'x' } },
    ];
    for (const options of bad) {
      const error = await rejection(
        store.append('s', [ev(1, 'hi', 'user/message')], options as AppendOptions),
      );
      expect(error.code, JSON.stringify(options)).toBe('INVALID');
    }
    // A first batch has nothing before it.
    await store.create({ id: 'new' });
    const first = await rejection(store.append('new', [ev(0, 'hi', 'user/message')], { after: ev(-1) }));
    expect(first.code).toBe('INVALID');
    expect(await inner.has('new')).toBe(false);
    expect(await raw(inner, 's')).toHaveLength(1);
    expect((await store.load('s')).summary.firstPrompt).toBeUndefined();
  });
});

describe('after a rotation or a rekey: the stored event under another key', () => {
  it('after a rekey under the current key, the sealed after matches as is (no extra read)', async () => {
    const inner = counted(await openMemoryStore());
    const agent = sealStore(inner.store, { keys: oldKeyring });
    await agent.create({ id: 's' });
    await agent.append('s', [ev(0)]);
    await agent.append('s', [ev(1, { text: 'planned on' })]); // each sealed on its own (ts1)
    await rekeyStore({ store: inner.store, staging: await openMemoryStore(), keyring });
    expect(sealedKeyId((await raw(inner.store, 's'))[1]!.data)).toBe('k2');
    const store = sealStore(inner.store, { keys: keyring });
    const reads = inner.reads();
    await expect(store.append('s', [ev(2)], { after: ev(1, { text: 'planned on' }) })).resolves.toEqual({
      nextSeq: 3,
    });
    expect(inner.reads()).toBe(reads);
  });

  it.each([
    ['written under k1, appended with k2 current (rotation before rekey)', false],
    ['rekeyed under k2, appended with k3 current (a later rotation)', true],
  ])('%s: the plaintext after is written (one read), a wrong after is CONFLICT', async (_what, rekey) => {
    for (const backend of backends) {
      const inner = counted(await open(backend[1]));
      const agent = sealStore(inner.store, { keys: oldKeyring });
      await agent.create({ id: 's' });
      await agent.append('s', [ev(0)]);
      await agent.append('s', [ev(1, { text: 'planned on' })]); // each sealed on its own (ts1)
      if (rekey) await rekeyStore({ store: inner.store, staging: await openMemoryStore(), keyring });
      const storedKey = rekey ? 'k2' : 'k1';
      const store = sealStore(inner.store, { keys: rekey ? ring321 : keyring });
      const current = rekey ? 'k3' : 'k2';

      await expectAfterConflict(store.append('s', [ev(2)], { after: ev(1, { text: 'other' }) }), 's', 1);
      expect(await raw(inner.store, 's'), backend[0]).toHaveLength(2);

      // A new instance: `store` keeps the last record it read (above) as its hint for after.
      const fresh = sealStore(inner.store, { keys: rekey ? ring321 : keyring });
      const reads = inner.reads();
      await expect(fresh.append('s', [ev(2)], { after: ev(1, { text: 'planned on' }) })).resolves.toEqual({
        nextSeq: 3,
      });
      expect(inner.reads() - reads, backend[0]).toBe(1);
      const keys = (await raw(inner.store, 's')).map((e) => sealedKeyId(e.data));
      expect(keys, backend[0]).toEqual([storedKey, storedKey, current]);
      // The next append is after an event sealed under the current key: the fast path again.
      const next = inner.reads();
      await fresh.append('s', [ev(3)], { after: ev(2) });
      expect(inner.reads(), backend[0]).toBe(next);
      expect((await fresh.load('s')).events.map((e) => e.seq)).toEqual([0, 1, 2, 3]);
    }
  });

  it('is CORRUPT (unknown-key), nothing written, when a rekey sealed after under a key the writer lacks', async () => {
    const inner = await openMemoryStore();
    const agent = sealStore(inner, { keys: keyring });
    await agent.create({ id: 's' });
    // One event a batch (ts1): a batch sealed as one fails at its first record (batch.test.ts).
    await agent.append('s', [ev(0)]);
    await agent.append('s', [ev(1)]);
    await rekeyStore({ store: inner, staging: await openMemoryStore(), keyring: ring32 });
    const error = await rejection(agent.append('s', [ev(2)], { after: ev(1) }));
    expect(error.code).toBe('CORRUPT');
    expect(error.sessionId).toBe('s');
    expect(error.location).toEqual({ seq: 1 });
    expect(sealedFailureOf(error)).toBe('unknown-key');
    expect(await raw(inner, 's')).toHaveLength(2);
  });

  it('is CORRUPT (tampered), nothing written, when the stored record at after.seq fails authentication', async () => {
    const src = await openMemoryStore();
    const writer = sealStore(src, { keys: keyring });
    await writer.create({ id: 's' });
    await writer.append('s', [ev(0), ev(1)]);
    const [e0, e1] = await raw(src, 's');
    const token = (e1!.data as Record<string, string>)[SEALED_KEY]!;
    const flipped =
      token.slice(0, -5) + String.fromCharCode(token.charCodeAt(token.length - 5) ^ 1) + token.slice(-4);
    const inner = await openMemoryStore();
    await inner.create({ id: 's' });
    await inner.append('s', [e0!, { ...e1!, data: { [SEALED_KEY]: flipped } }]);
    const store = sealStore(inner, { keys: keyring });
    const error = await rejection(store.append('s', [ev(2)], { after: ev(1) }));
    expect(error).toMatchObject({ code: 'CORRUPT', sessionId: 's', location: { seq: 1 } });
    expect(error.message).toContain('session s seq 1');
    expect(sealedFailureOf(error)).toBe('tampered');
    expect(await raw(inner, 's')).toHaveLength(2);
  });

  it('is CONFLICT when the session holds no event at after.seq (deleted, or pending and never written)', async () => {
    const inner = await openMemoryStore();
    const store = sealStore(inner, { keys: keyring });
    await store.create({ id: 's' });
    await store.append('s', [ev(0), ev(1)]);
    await store.delete('s');
    await store.create({ id: 's' });
    const error = await rejection(store.append('s', [ev(2)], { after: ev(1) }));
    expect(error.code).toBe('CONFLICT');
    expect(error.location).toEqual({ seq: 1 });
    expect(error.message).toContain('holds no event at seq 1');
    expect(await inner.has('s')).toBe(false);
  });
});

describe('after with redaction on', () => {
  async function redacting(make: () => Promise<SessionStore>) {
    const inner = counted(await open(make));
    const store = sealStore(inner.store, { keys: keyring, redact: tiny });
    await store.create({ id: 'r' });
    const appended = ev(1, { text: 'key SECRET here', n: 1 });
    await store.append('r', [ev(0), appended]);
    return { inner, store, appended };
  }

  it.each(backends)(
    'accepts after as the caller appended it (unredacted), with no extra read, over %s',
    async (_name, make) => {
      const { inner, store, appended } = await redacting(make);
      const reads = inner.reads();
      await expect(store.append('r', [ev(2)], { after: appended })).resolves.toEqual({ nextSeq: 3 });
      expect(inner.reads()).toBe(reads);
    },
  );

  it.each(backends)(
    'accepts after as read back (redacted), with no extra read, over %s',
    async (_name, make) => {
      const { inner, store } = await redacting(make);
      const read: SessionEvent[] = [];
      for await (const event of store.read('r', { fromSeq: 1 })) read.push(event);
      const [readBack] = read;
      expect(readBack!.data).toEqual({ text: 'key [redacted:tiny] here', n: 1 });
      const reads = inner.reads();
      await expect(store.append('r', [ev(2)], { after: readBack! })).resolves.toEqual({ nextSeq: 3 });
      expect(inner.reads()).toBe(reads);
    },
  );

  it('is CONFLICT for an after that differs outside the redacted part', async () => {
    const { inner, store } = await redacting(() => openMemoryStore());
    await expectAfterConflict(
      store.append('r', [ev(2)], { after: ev(1, { text: 'key SECRET there', n: 1 }) }),
      'r',
      1,
    );
    await expectAfterConflict(
      store.append('r', [ev(2)], { after: ev(1, { text: 'key [redacted:tiny] here', n: 2 }) }),
      'r',
      1,
    );
    expect(await raw(inner.store, 'r')).toHaveLength(2);
  });

  it('accepts an unredacted after stored by a store without redaction (compared opened)', async () => {
    const inner = await openMemoryStore();
    const plain = sealStore(inner, { keys: keyring });
    await plain.create({ id: 'r' });
    await plain.append('r', [ev(0, 'SECRET kept')]);
    const store = sealStore(inner, { keys: keyring, redact: tiny });
    await expect(store.append('r', [ev(1, 'more SECRET')], { after: ev(0, 'SECRET kept') })).resolves.toEqual(
      {
        nextSeq: 2,
        redactions: { tiny: 1 },
      },
    );
    expect((await store.load('r')).events.map((e) => e.data)).toEqual([
      'SECRET kept',
      'more [redacted:tiny]',
    ]);
  });
});

describe('firstPrompt and summary around an append with after', () => {
  it('sets firstPrompt after a batch written with after, and leaves the summary alone on CONFLICT', async () => {
    const inner = await openMemoryStore();
    const store = sealStore(inner, { keys: keyring, redact: tiny });
    await store.create({ id: 'p' });
    await store.append('p', [ev(0, 'no prompt')]);
    const summary = (await inner.load('p')).summary;
    await rejection(store.append('p', [ev(1, 'a SECRET prompt', 'user/message')], { after: ev(0, 'other') }));
    expect((await inner.load('p')).summary).toEqual(summary);
    await expect(
      store.append('p', [ev(1, 'a SECRET prompt', 'user/message')], { after: ev(0, 'no prompt') }),
    ).resolves.toEqual({ nextSeq: 2, redactions: { tiny: 1 } });
    const loaded = await store.load('p');
    expect(loaded.summary.firstPrompt).toBe('a [redacted:tiny] prompt');
    expect(loaded.summary.attrs).toEqual({ 'tidemark:redactions': { tiny: 1 } });
  });
});

describe('capabilities', () => {
  it.each(backends)('appendAfter is true over %s, whose store checks after', async (_name, make) => {
    const inner = await open(make);
    expect(checksAppendAfter(inner)).toBe(true);
    const store = sealStore(inner, { keys: keyring });
    expect(store.capabilities).toEqual({ appendAfter: true });
    expect(checksAppendAfter(store)).toBe(true);
  });

  it('appendAfter is false over an inner store without capabilities or without appendAfter', async () => {
    const memory = await openMemoryStore();
    const fake = (capabilities: unknown): SessionStore => withCapabilities(memory, () => capabilities);
    for (const capabilities of [undefined, { appendAfter: false }]) {
      const store = sealStore(fake(capabilities), { keys: keyring });
      expect(store.capabilities).toEqual({ appendAfter: false });
      expect(checksAppendAfter(store)).toBe(false);
    }
    // Still an append like any other, and `after` is still validated.
    const store = sealStore(fake(undefined), { keys: keyring });
    await store.create({ id: 'f' });
    await expect(store.append('f', [ev(0)])).resolves.toEqual({ nextSeq: 1 });
    expect((await rejection(store.append('f', [ev(1)], { after: ev(5) }))).code).toBe('INVALID');
  });

  it('is decided when the sealed store is made', async () => {
    let capabilities: { appendAfter: boolean } | undefined = { appendAfter: true };
    const memory = await openMemoryStore();
    const inner = withCapabilities(memory, () => capabilities);
    const store = sealStore(inner, { keys: keyring });
    capabilities = undefined;
    expect(store.capabilities.appendAfter).toBe(true);
  });
});
