// Batches sealed as one (ts2): what is stored, the bytes (against a reference written from the
// format's description), reads that start inside a batch, a tail cut inside a batch, tampering
// with a later record of a batch, `after` naming such a record, a retry split otherwise than the
// stored batch, and rekey keeping each batch whole.
import type { JsonValue, SessionEvent, SessionStore } from '@tidemark/core';
import { openMemoryStore } from '@tidemark/memory';
import { describe, expect, it } from 'vitest';
import {
  Keyring,
  openEvent,
  rekeyStore,
  SEALED_KEY,
  SealedEventOpener,
  sealedFailureOf,
  sealStore,
} from '../src/index.js';
import { counted, ev, keyring, rejection } from './helpers.js';
import { referenceBody } from './reference.js';

const tokenOf = (event: SessionEvent) => (event.data as Record<string, string>)[SEALED_KEY]!;

async function raw(inner: SessionStore, id: string): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  for await (const event of inner.read(id)) out.push(event);
  return out;
}

async function sealedSession(events: SessionEvent[][], id = 's') {
  const inner = await openMemoryStore();
  const store = sealStore(inner, { keys: keyring });
  await store.create({ id });
  for (const batch of events) await store.append(id, batch);
  return { inner, store };
}

const batchOf = (from: number, n: number, type = 'tool/call') =>
  Array.from({ length: n }, (_, i) => ev(from + i, { n: from + i, text: `event ${from + i}` }, type));

describe('a batch sealed as one', () => {
  it('stores its ciphertext in its first record and an index with that IV in each later one', async () => {
    const { inner, store } = await sealedSession([batchOf(0, 3), [ev(3)], batchOf(4, 2)]);
    const tokens = (await raw(inner, 's')).map(tokenOf);
    const head = tokens[0]!.split('.');
    expect(head.slice(0, 3)).toEqual(['ts2', 'k2', '3']);
    expect(tokens[1]).toBe(`ts2.k2.@1.${head[3]}`);
    expect(tokens[2]).toBe(`ts2.k2.@2.${head[3]}`);
    expect(tokens[3]).toMatch(/^ts1\.k2\./); // a batch of one is sealed on its own
    expect(tokens[4]!.split('.').slice(0, 3)).toEqual(['ts2', 'k2', '2']);
    expect((await store.load('s')).events).toEqual([...batchOf(0, 3), ev(3), ...batchOf(4, 2)]);
  });

  it('seals the bytes the format describes (HMAC IV over place and plaintext, AES-256-GCM)', async () => {
    const master = Buffer.alloc(32, 2); // keyring's k2
    const batch = [ev(0, { a: 'é✓' }, 'user/message'), ev(1, null, 'turn/end'), ev(2, [1, 'two'])];
    const { inner } = await sealedSession([batch], 'sess');
    const aad = 'ts2\0batch\0sess\x000\x003\0k2';
    const body = referenceBody(master, aad, JSON.stringify(batch.map((e) => [e.type, e.time, e.data])));
    const ivText = body.slice(0, body.indexOf('.'));
    expect((await raw(inner, 'sess')).map(tokenOf)).toEqual([
      `ts2.k2.3.${body}`,
      `ts2.k2.@1.${ivText}`,
      `ts2.k2.@2.${ivText}`,
    ]);
  });

  it('is cut into several batches past the event limit, each sealed as one', async () => {
    const inner = await openMemoryStore();
    const store = sealStore(inner, { keys: keyring, limits: { maxEventBytes: 200 } });
    await store.create({ id: 's' });
    const batch = batchOf(0, 9);
    await store.append('s', batch);
    const counts = (await raw(inner, 's')).map((e) => tokenOf(e).split('.')[2]);
    const heads = counts.filter((c) => !c!.startsWith('@')).map(Number);
    expect(heads.length).toBeGreaterThan(1);
    expect(heads.reduce((a, b) => a + b, 0)).toBe(9);
    expect((await store.load('s')).events).toEqual(batch);
  });

  it('reads from inside a batch, with its first record read along (one more read)', async () => {
    const { inner, store } = await sealedSession([batchOf(0, 5), batchOf(5, 5)]);
    const counting = counted(inner);
    const reader = sealStore(counting.store, { keys: keyring });
    const read = async (range: { fromSeq?: number; toSeq?: number; last?: number }) => {
      const out: SessionEvent[] = [];
      for await (const event of reader.read('s', range)) out.push(event);
      return out;
    };
    const all = (await store.load('s')).events;
    let before = counting.reads();
    expect(await read({ fromSeq: 3 })).toEqual(all.slice(3));
    expect(counting.reads() - before).toBe(2);
    expect(await read({ fromSeq: 2, toSeq: 6 })).toEqual(all.slice(2, 7));
    expect(await read({ last: 3 })).toEqual(all.slice(7));
    before = counting.reads();
    expect(await read({ fromSeq: 5 })).toEqual(all.slice(5)); // a batch's first record: no more
    expect(counting.reads() - before).toBe(1);
  });

  it('opens what a tail cut inside it left, and the session goes on after it', async () => {
    const inner = await openMemoryStore();
    const store = sealStore(inner, { keys: keyring });
    await store.create({ id: 's' });
    const batch = [ev(0), ev(1, null, 'turn/end'), ev(2), ev(3)];
    await store.append('s', batch);
    const cut = await store.load('s', { tail: 'cut' });
    expect(cut.events).toEqual(batch.slice(0, 2));
    await store.append('s', [ev(2, { again: true }), ev(3, null, 'turn/end')]);
    expect((await store.load('s')).events).toEqual([
      ...batch.slice(0, 2),
      ev(2, { again: true }),
      ev(3, null, 'turn/end'),
    ]);
  });

  it('opens a later record alone only with its batch (INVALID from openEvent, which opens the first)', async () => {
    const { inner } = await sealedSession([batchOf(0, 3)]);
    const [head, second] = await raw(inner, 's');
    expect(openEvent(keyring, 's', head!)).toEqual(batchOf(0, 1)[0]);
    const error = (() => {
      try {
        openEvent(keyring, 's', second!);
      } catch (e) {
        return e as { code: string; message: string };
      }
      return undefined;
    })();
    expect(error?.code).toBe('INVALID');
    expect(error?.message).toContain('batch sealed at seq 0');
    const opener = new SealedEventOpener(keyring, 's');
    expect(opener.headSeqFor(second!)).toBe(0);
    opener.open(head!);
    expect(opener.headSeqFor(second!)).toBeUndefined();
    expect(opener.open(second!)).toEqual(batchOf(0, 3)[1]);
  });
});

describe('a later record of a batch, tampered', () => {
  async function planted(change: (records: SessionEvent[]) => SessionEvent[]) {
    const { inner: source } = await sealedSession([batchOf(0, 3), batchOf(3, 3)]);
    const inner = await openMemoryStore();
    await inner.create({ id: 's' });
    await inner.append('s', change(await raw(source, 's')));
    return sealStore(inner, { keys: keyring });
  }

  async function expectCorrupt(store: SessionStore, seq: number, failure = 'tampered') {
    for (const attempt of [
      () => store.load('s'),
      async () => {
        for await (const _ of store.read('s')) void _;
      },
      async () => {
        for await (const _ of store.read('s', { fromSeq: seq })) void _;
      },
    ]) {
      const error = await rejection(attempt());
      expect(error).toMatchObject({ code: 'CORRUPT', sessionId: 's', location: { seq } });
      expect(sealedFailureOf(error)).toBe(failure);
    }
  }

  const withData = (event: SessionEvent, data: JsonValue): SessionEvent => ({ ...event, data });

  it('is CORRUPT at its seq when its type or time differ from what the batch sealed', async () => {
    await expectCorrupt(await planted((r) => r.map((e) => (e.seq === 1 ? { ...e, type: 'x/y' } : e))), 1);
    await expectCorrupt(
      await planted((r) => r.map((e) => (e.seq === 2 ? { ...e, time: '2026-12-02T12:00:00.001Z' } : e))),
      2,
    );
  });

  it('is CORRUPT at its seq when it is another batch’s, or at another index', async () => {
    // seq 4's record (index 1 of the batch at 3) put at seq 1: the index matches, the IV does not.
    await expectCorrupt(await planted((r) => r.map((e, i) => (i === 1 ? withData(e, r[4]!.data) : e))), 1);
    // index 2 at seq 1: it names a batch at seq -1.
    await expectCorrupt(await planted((r) => r.map((e, i) => (i === 1 ? withData(e, r[2]!.data) : e))), 1);
    // index 1 past the batch's end: seq 3 holds a record naming a batch at seq 2.
    await expectCorrupt(await planted((r) => r.map((e, i) => (i === 3 ? withData(e, r[1]!.data) : e))), 3);
  });

  it('is CORRUPT (unknown-key) at its seq when it names a key the keyring lacks', async () => {
    await expectCorrupt(
      await planted((r) =>
        r.map((e, i) =>
          i === 2 ? withData(e, { [SEALED_KEY]: tokenOf(e).replace('ts2.k2.', 'ts2.k9.') }) : e,
        ),
      ),
      2,
      'unknown-key',
    );
  });

  it('is CORRUPT at the batch’s first record when that one fails, however the read starts', async () => {
    const store = await planted((r) =>
      r.map((e, i) => (i === 3 ? withData(e, { [SEALED_KEY]: tokenOf(e).replace('.3.', '.2.') }) : e)),
    );
    for (const range of [undefined, { fromSeq: 4 }, { last: 1 }]) {
      const error = await rejection(
        (async () => {
          for await (const _ of store.read('s', range)) void _;
        })(),
      );
      expect(error).toMatchObject({ code: 'CORRUPT', location: { seq: 3 } });
    }
  });
});

describe('append after a later record of a batch', () => {
  it('is written with no extra read by the instance that stored or read it, with reads by another', async () => {
    const inner = counted(await openMemoryStore());
    const writer = sealStore(inner.store, { keys: keyring });
    await writer.create({ id: 's' });
    await writer.append('s', batchOf(0, 3));
    let before = inner.reads();
    await expect(writer.append('s', batchOf(3, 2), { after: batchOf(0, 3)[2]! })).resolves.toEqual({
      nextSeq: 5,
    });
    expect(inner.reads()).toBe(before);

    const other = sealStore(inner.store, { keys: keyring });
    before = inner.reads();
    await expect(other.append('s', [ev(5)], { after: batchOf(3, 2)[1]! })).resolves.toEqual({ nextSeq: 6 });
    expect(inner.reads() - before).toBe(2); // the record at after.seq, then its batch's first one with it
    const reader = sealStore(inner.store, { keys: keyring });
    await reader.load('s');
    before = inner.reads();
    await expect(reader.append('s', [ev(6)], { after: ev(5) })).resolves.toEqual({ nextSeq: 7 });
    expect(inner.reads()).toBe(before);
  });

  it('is CONFLICT naming the seq when after differs from what the batch sealed there', async () => {
    const { inner, store } = await sealedSession([batchOf(0, 3)]);
    const fresh = sealStore(inner, { keys: keyring });
    for (const writer of [store, fresh]) {
      const error = await rejection(writer.append('s', [ev(3)], { after: ev(2, { other: true }) }));
      expect(error).toMatchObject({ code: 'CONFLICT', sessionId: 's', location: { seq: 2 } });
    }
    expect(await raw(inner, 's')).toHaveLength(3);
  });

  it('is CONFLICT after another instance deleted the session and wrote it again otherwise', async () => {
    const { inner, store } = await sealedSession([batchOf(0, 3)]);
    const other = sealStore(inner, { keys: keyring });
    await other.delete('s');
    await other.create({ id: 's' });
    await other.append('s', [ev(0), ev(1), ev(2, { rewritten: true })]);
    // `store` still knows the last record it wrote: a hint the inner store refuses.
    const error = await rejection(store.append('s', [ev(3)], { after: batchOf(0, 3)[2]! }));
    expect(error).toMatchObject({ code: 'CONFLICT', location: { seq: 2 } });
    await expect(store.append('s', [ev(3)], { after: ev(2, { rewritten: true }) })).resolves.toEqual({
      nextSeq: 4,
    });
  });
});

describe('a retry of a stored batch, split otherwise', () => {
  it('succeeds without writing, for a part of the batch or across two batches', async () => {
    const { inner, store } = await sealedSession([batchOf(0, 3), batchOf(3, 3)]);
    const stored = await raw(inner, 's');
    const retrier = sealStore(inner, { keys: keyring });
    await expect(retrier.append('s', batchOf(0, 2))).resolves.toEqual({ nextSeq: 6 });
    await expect(retrier.append('s', batchOf(1, 4))).resolves.toEqual({ nextSeq: 6 });
    await expect(store.append('s', batchOf(4, 2), { after: batchOf(3, 1)[0]! })).resolves.toEqual({
      nextSeq: 6,
    });
    expect(await raw(inner, 's')).toEqual(stored);
    const error = await rejection(retrier.append('s', [ev(1, { different: true }), ev(2)]));
    expect(error.code).toBe('CONFLICT');
  });
});

describe('rekey', () => {
  it('keeps each batch sealed as one, under the new key', async () => {
    const { inner } = await sealedSession([batchOf(0, 3), [ev(3)], batchOf(4, 4)]);
    const shape = (events: SessionEvent[]) =>
      events.map((e) => {
        const parts = tokenOf(e).split('.');
        return parts[0] === 'ts1' ? 'alone' : parts[2]!;
      });
    const before = shape(await raw(inner, 's'));
    const next = Keyring.from({
      current: 'k3',
      keys: { k3: Buffer.alloc(32, 3).toString('base64'), k2: Buffer.alloc(32, 2).toString('base64') },
    });
    await rekeyStore({ store: inner, staging: await openMemoryStore(), keyring: next });
    const after = await raw(inner, 's');
    expect(shape(after)).toEqual(before);
    expect(after.every((e) => tokenOf(e).split('.')[1] === 'k3')).toBe(true);
    expect((await sealStore(inner, { keys: next }).load('s')).events).toEqual([
      ...batchOf(0, 3),
      ev(3),
      ...batchOf(4, 4),
    ]);
  });
});

describe('without keys', () => {
  it('shows both forms as stored, and still refuses plaintext among them', async () => {
    const { inner } = await sealedSession([batchOf(0, 3), [ev(3)]]);
    const keyless = sealStore(inner, { keys: undefined });
    expect((await keyless.load('s')).events).toEqual(await raw(inner, 's'));
    const planted = await openMemoryStore();
    await planted.create({ id: 's' });
    const records = await raw(inner, 's');
    await planted.append('s', [records[0]!, { ...records[1]!, data: { text: 'plain' } }]);
    const error = await rejection(sealStore(planted, { keys: undefined }).load('s'));
    expect(error).toMatchObject({ code: 'CORRUPT', location: { seq: 1 } });
    expect(sealedFailureOf(error)).toBe('plaintext');
  });
});
