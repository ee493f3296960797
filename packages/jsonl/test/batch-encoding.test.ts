// The writer frames a batch straight into bytes (encodeBatchBytes); those bytes must be exactly
// the text encoding (encodeBatch) that the scanner and every older reader know, for any payload,
// multi-byte and surrogate pairs included.
import { prepareBatch } from '@tidemark/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeBatch, encodeBatchBytes } from '../src/format.js';
import { LogScanner } from '../src/scan.js';
import { isoOfMs } from '../src/writer.js';

const T = '2026-01-01T00:00:00.000Z';

const events = (texts: readonly string[], first: number) =>
  prepareBatch(texts.map((text, i) => ({ seq: first + i, type: 'note', time: T, data: { text, n: i } })));

describe('encodeBatchBytes', () => {
  it('writes the bytes of encodeBatch for any text', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), fc.constant('\uD800x')),
          { minLength: 1, maxLength: 6 },
        ),
        fc.nat(1000),
        (texts, first) => {
          const batch = events(texts, first);
          const last = first + texts.length - 1;
          expect(
            encodeBatchBytes(batch, last, T).equals(Buffer.from(encodeBatch(batch, last, T), 'utf8')),
          ).toBe(true);
        },
      ),
    );
  });

  it('frames lines the scanner reads back as one committed batch', () => {
    const batch = events(['a', 'ü€', '😀'], 0);
    const scanner = new LogScanner({ start: { offset: 0, nextSeq: 0 }, formatVersion: 2 });
    const [read] = scanner.push(encodeBatchBytes(batch, 2, T));
    expect(read?.events).toEqual(batch.map((p) => p.event));
    expect(read?.at).toBe(T);
  });

  it('refuses a batch whose byte lengths are not those of its text', () => {
    const [one] = events(['x'], 0);
    expect(() => encodeBatchBytes([{ json: one!.json, bytes: one!.bytes + 3 }], 0, T)).toThrow(/framed/);
  });
});

describe('isoOfMs', () => {
  it('is toISOString for every millisecond, across seconds and in any order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -62167219200000, max: 253402300799999 }), { minLength: 1 }),
        (times) => {
          for (const ms of times) {
            expect(isoOfMs(ms)).toBe(new Date(ms).toISOString());
            expect(isoOfMs(ms + 1)).toBe(new Date(ms + 1).toISOString());
          }
        },
      ),
    );
    expect(isoOfMs(-1)).toBe(new Date(-1).toISOString());
  });
});
