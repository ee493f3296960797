// The writer frames a batch straight into bytes (encodeBatchBytes); those bytes must be exactly
// the text encoding (encodeBatch) that the scanner and every older reader know, for any payload,
// multi-byte and surrogate pairs included.
import { prepareBatch } from '@tidemark/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeEventLine, encodeBatch, encodeBatchBytes, readEventLine } from '../src/format.js';
import { LogScanner } from '../src/scan.js';
import { isoOfMs } from '../src/writer.js';
import { sealLine } from './logs.js';

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

describe('readEventLine', () => {
  const value = fc.oneof(
    fc.nat(20),
    fc.constantFrom(-1, 1.5, 0, '05', 'x', T, 'not a time', null, '"q"'),
    fc.string({ unit: 'binary', maxLength: 8 }),
    fc.jsonValue({ maxDepth: 2 }),
  );
  const member = fc.tuple(
    fc.constantFrom('seq', 'type', 'time', 'data', 'start', 'end', 'at', 'crc', 'x'),
    value,
  );
  const spacing = fc.constantFrom('', ' ');

  it('decodes any sealed line exactly as a parse of the whole line does', () => {
    fc.assert(
      fc.property(fc.array(member, { maxLength: 9 }), spacing, (members, space) => {
        const body = `{${members.map(([k, v]) => `${JSON.stringify(k)}:${space}${JSON.stringify(v)}`).join(',')}`;
        const line = sealLine(body);
        const general = decodeEventLine(line, 0, line.length);
        expect(readEventLine(line, 0, line.length)).toEqual(general.ok ? general.value : undefined);
      }),
      { numRuns: 3000 },
    );
  });

  it('agrees on lines framed like the writer frames them, with odd framing and payloads', () => {
    const number = fc.oneof(
      fc.nat(30).map(String),
      fc.constantFrom('007', '1e1', '-1', '2.0', ' 3', '123456789012345678'),
    );
    const framing = fc.tuple(
      fc.option(number),
      number,
      fc.option(fc.constantFrom(JSON.stringify(T), '"x"', '"2026-01-01T00:00:00\\u002e000Z"', '"é"', '5')),
    );
    const extra = fc.option(fc.constantFrom(',"end":4', ',"start":1', ',"at":"x"', ',"crc":1', ',"seq":3'));
    fc.assert(
      fc.property(
        fc.nat(30),
        fc.jsonValue({ maxDepth: 2 }),
        extra,
        framing,
        (seq, data, more, [first, last, at]) => {
          let body = `{"seq":${seq},"type":"t","time":"${T}","data":${JSON.stringify(data)}${more ?? ''}`;
          if (first !== null) body += `,"start":${first}`;
          body += `,"end":${last}`;
          if (at !== null) body += `,"at":${at}`;
          const line = sealLine(body);
          const general = decodeEventLine(line, 0, line.length);
          expect(readEventLine(line, 0, line.length)).toEqual(general.ok ? general.value : undefined);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('decodes the lines the writer frames, batch bounds and time included', () => {
    const text = encodeBatch(events(['a', 'b', 'c'], 7), 9, T);
    const lines = text
      .split('\n')
      .slice(0, -1)
      .map((l) => Buffer.from(l, 'utf8'));
    expect(lines.map((l) => readEventLine(l, 0, l.length))).toEqual(
      lines.map((l) => {
        const general = decodeEventLine(l, 0, l.length);
        return general.ok ? general.value : 'refused';
      }),
    );
    expect(readEventLine(lines[2]!, 0, lines[2]!.length)).toMatchObject({ start: 7, end: 9, at: T });
  });
});
