// Sealing is deterministic, and the store relies on it: a retried batch or an `after` must seal to
// the very bytes already stored. So the bytes `ts1` sealing gives are pinned here, twice: against
// records written by an earlier implementation (known answers), and against a reference written
// from the README's description with node:crypto's HMAC and cipher objects, for arbitrary input.
import type { JsonValue, SessionEvent } from '@tidemark/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Keyring, openEvent, SEALED_KEY, sealAttrs, sealEvent, sealStore, sealText } from '../src/index.js';
import { K1, K2, memory, T, tiny } from './helpers.js';
import { referenceBody } from './reference.js';

/** `ts1` sealing as the README describes it, one step at a time. */
function referenceSeal(master: Buffer, keyId: string, aad: string, plaintext: string): string {
  return `ts1.${keyId}.${referenceBody(master, aad, plaintext)}`;
}

function referenceEvent(master: Buffer, keyId: string, sessionId: string, event: SessionEvent): string {
  const aad = `ts1\0event\0${sessionId}\0${event.seq}\0${event.type}\0${event.time}\0${keyId}`;
  return referenceSeal(master, keyId, aad, JSON.stringify(event.data));
}

const sealedOf = (event: SessionEvent) => (event.data as Record<string, string>)[SEALED_KEY];

const master = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
const ring = Keyring.from({ current: 'k1', keys: { k1: master } });
const TIME = '2026-01-01T00:00:00.000Z';

describe('ts1 sealing gives the bytes records were written with', () => {
  it('known answers, from records sealed before sealing was reworked for speed', () => {
    const event = {
      seq: 7,
      type: 'user/message',
      time: TIME,
      data: { text: 'héllo ✓ 😀', n: [1, 2.5, null, true] },
    };
    expect(sealedOf(sealEvent(ring, 's1', event))).toBe(
      'ts1.k1.07zyNNxddFJr1AoU.nbPgZtWVuKBNU3sEd5y7f0RsmHw-m0r0wzXwkB69N72iIPVK2PofnZdioAXN3RgteerEebniPB9IyvzY16NFgA',
    );
    expect(sealedOf(sealEvent(ring, 's1', { ...event, seq: 8, data: 'x'.repeat(300) }))).toBe(
      'ts1.k1.kNxuRy6MRMtVvMQO.TC_l1kc182ITMrluiaC4RBrstreceqFHnw0dxUTmjAZpHNwKerGNgcCw8rrUjDAUD5y0ogO7g-5zfTTTtDlMRDPBWn3D5QxXCcPs3gvKdmorOdSyqbkWf4ObKLzXzZ9JHWKk3Z5r58SFP7qC-dqroNiMBRGNFCVVd2xj_zqsQkhrI0oZlVVPOPiIeyk2r-JYdOGeBXR7ZIkHVc7MfY5Z4BtlxcQggioH45Hs2XSN8wo6jdNBwfFoPNJ7SV0iHWF3iMXdHjigmJPEah-SHF95x8Qa_1U-WpHSJws5lEbH8u0HCtKQkMuUWjgUSIvbIeJr1gkMdcMnXvk7Zmw-Uxuz9gUjC22_kuDjS8ienrumvubjrqe8-NGH1eXmFT-DN80XwjJ-i1_PiI2VFfW3OjAtEuA-ujikXPQYgg7yvE2_',
    );
    expect(sealText(ring, 's1', 'title', 'A title ✓')).toBe(
      'ts1.k1.QroGg_X-aKnqRcQn.gmlTb7iic8bcSjGBjL-qJ6mMHPE8RFtcQhFXJag',
    );
    expect(sealAttrs(ring, 's1', { a: 1, b: 'two' })).toEqual({
      [SEALED_KEY]: 'ts1.k1.iTY8PJeSyPmM5nxQ.GMu-phaThMcVkIH0IHFKQXXaIJffupauiIC5R5h47eX8',
    });
  });

  it('matches the reference for arbitrary data, types, sessions and sizes', () => {
    const text = fc.string({ unit: 'binary', maxLength: 40 });
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>,
        fc.nat(1_000_000),
        text.filter((t) => t.length > 0),
        fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/),
        (data, seq, type, sessionId) => {
          const event = { seq, type, time: TIME, data };
          expect(sealedOf(sealEvent(ring, sessionId, event))).toBe(
            referenceEvent(master, 'k1', sessionId, event),
          );
        },
      ),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(text, (title) => {
        const aad = 'ts1\0title\0s\0k1';
        expect(sealText(ring, 's', 'title', title)).toBe(
          referenceSeal(master, 'k1', aad, JSON.stringify(title)),
        );
      }),
      { numRuns: 100 },
    );
  });

  it('matches the reference for data past the reused buffer (16 KiB), multi-byte, and back', () => {
    for (const data of ['ü'.repeat(6000), 'a'.repeat(17_000), { big: '😀'.repeat(5000) }, 'small']) {
      const event = { seq: 1, type: 'tool/result', time: TIME, data };
      const sealed = sealEvent(ring, 's', event);
      expect(sealedOf(sealed)).toBe(referenceEvent(master, 'k1', 's', event));
      expect(openEvent(ring, 's', sealed).data).toEqual(data);
    }
  });

  it('seals under each keyring its own key, however their seals interleave', () => {
    const a = Keyring.from({ current: 'k1', keys: { k1: K1 } });
    const b = Keyring.from({ current: 'k2', keys: { k2: K2 } });
    for (let seq = 0; seq < 4; seq++) {
      const event = { seq, type: 'x', time: T, data: { seq } };
      expect(sealedOf(sealEvent(a, 's', event))).toBe(
        referenceEvent(Buffer.from(K1, 'base64'), 'k1', 's', event),
      );
      expect(sealedOf(sealEvent(b, 's', event))).toBe(
        referenceEvent(Buffer.from(K2, 'base64'), 'k2', 's', event),
      );
    }
  });

  it('a sealed store writes the reference bytes, for the batch and for the `after` it hands on', async () => {
    const inner = await memory();
    const store = sealStore(inner, { keys: ring });
    await store.create({ id: 's' });
    const first = { seq: 0, type: 'tool/call', time: TIME, data: { name: 'ls', args: ['-l'] } };
    const second = { seq: 1, type: 'tool/result', time: TIME, data: 'total 0' };
    await store.append('s', [first]);
    await store.append('s', [second], { after: first });
    const stored: SessionEvent[] = [];
    for await (const event of inner.read('s')) stored.push(event);
    expect(stored.map(sealedOf)).toEqual([
      referenceEvent(master, 'k1', 's', first),
      referenceEvent(master, 'k1', 's', second),
    ]);
  });

  it('a redacting store writes the reference bytes of the redacted event', async () => {
    const inner = await memory();
    const store = sealStore(inner, { keys: ring, redact: tiny });
    await store.create({ id: 's' });
    const given = { seq: 0, type: 'tool/result', time: TIME, data: { out: 'a SECRET b', n: 1 } };
    // One event a batch: each sealed on its own (ts1; batches sealed as one: batch.test.ts).
    await store.append('s', [given]);
    await store.append('s', [{ seq: 1, type: 'tool/result', time: TIME, data: 'clean' }]);
    const stored: SessionEvent[] = [];
    for await (const event of inner.read('s')) stored.push(event);
    expect(stored.map(sealedOf)).toEqual([
      referenceEvent(master, 'k1', 's', { ...given, data: { out: 'a [redacted:tiny] b', n: 1 } }),
      referenceEvent(master, 'k1', 's', { seq: 1, type: 'tool/result', time: TIME, data: 'clean' }),
    ]);
  });
});
