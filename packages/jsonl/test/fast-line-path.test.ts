// readEventLine reads the framing this code writes (`start`, `end`, `at` after the event) from the
// bytes and parses only the event; anything framed otherwise goes to a parse of the whole line.
// The fallback gives the same result, so these tests look at the fast path itself: it must be
// taken for every line the writer frames, answer exactly what the whole-line parse answers, and
// step aside (undefined) for every other framing.
import { prepareBatch } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import {
  CRC_SUFFIX_BYTES,
  decodeEventLine,
  encodeBatch,
  readEventLine,
  readFramedFast,
} from '../src/format.js';
import { sealLine } from './logs.js';

const T = '2026-01-01T00:00:00.000Z';

const fast = (line: Buffer) => readFramedFast(line, 0, line.length - CRC_SUFFIX_BYTES);
const whole = (line: Buffer) => {
  const decoded = decodeEventLine(line, 0, line.length);
  return decoded.ok ? decoded.value : undefined;
};

/** The lines of one batch as the writer frames them, without their newlines. */
function batchLines(datas: readonly unknown[], firstSeq: number): Buffer[] {
  const batch = prepareBatch(datas.map((data, i) => ({ seq: firstSeq + i, type: 'note', time: T, data })));
  const text = encodeBatch(batch, firstSeq + datas.length - 1, T);
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => Buffer.from(line, 'utf8'));
}

describe("the fast path on the writer's framing", () => {
  it('is taken for every line of a batch and answers what the whole-line parse answers', () => {
    const datas = [
      { text: 'plain' },
      { text: 'quotes " and \\ backslashes', nested: { end: 9, at: 'x', start: 1 } },
      'a string with ,"end":5 and ,"at":"2026" inside',
      ['é', '✓', '\u{1F600}'],
      null,
      12345678901234,
    ];
    for (const [first, count] of [
      [0, 1],
      [7, 2],
      [41, datas.length],
    ] as const) {
      const lines = batchLines(datas.slice(0, count), first);
      for (const line of lines) {
        const expected = whole(line);
        expect(expected).toBeDefined();
        expect(fast(line)).toEqual(expected);
        expect(readEventLine(line, 0, line.length)).toEqual(expected);
      }
      // The closing line carries `at`, the others do not; lines after the first carry `start`.
      expect(fast(lines.at(-1)!)?.at).toBe(T);
      if (lines.length > 1) expect(fast(lines[0]!)?.at).toBeUndefined();
      expect(fast(lines[0]!)?.start).toBeUndefined();
      if (lines.length > 1) expect(fast(lines[1]!)?.start).toBe(first);
      expect(fast(lines.at(-1)!)?.end).toBe(first + count - 1);
    }
  });

  it('reads every digit of `start` and `end`, zero and fifteen-digit values included', () => {
    for (const [first, count] of [
      [0, 1],
      [9, 2],
      [90, 1],
      [1089, 3],
      [999_999_999_999_990, 9],
    ] as const) {
      const lines = batchLines(
        Array.from({ length: count }, (_, i) => i),
        first,
      );
      for (const line of lines) expect(fast(line)).toEqual(whole(line));
      expect(fast(lines.at(-1)!)?.end).toBe(first + count - 1);
    }
  });

  it('reads a line inside a larger buffer at its own offsets', () => {
    const [line] = batchLines([{ text: 'x' }], 3);
    const padded = Buffer.concat([Buffer.from('"end":7,"at":"'), line!, Buffer.from('\n{"x":1}')]);
    const start = 14;
    const end = start + line!.length;
    expect(readFramedFast(padded, start, end - CRC_SUFFIX_BYTES)).toEqual(whole(line!));
    expect(readEventLine(padded, start, end)).toEqual(whole(line!));
  });
});

describe('the fast path on an `at` of any printable ASCII', () => {
  const event = '{"seq":3,"type":"note","time":"2026-01-01T00:00:00.000Z","data":{"a":1}';
  // Space (0x20) and tilde (0x7e) are the ends of the range the fast path reads as it is.
  for (const at of ['Jan 1 2026 10:00 UTC', 'Jan 1 2026 (~)']) {
    it(`takes ${JSON.stringify(at)} as the whole-line parse does`, () => {
      const line = sealLine(`${event},"end":3,"at":${JSON.stringify(at)}`);
      expect(fast(line)?.at).toBe(at);
      expect(fast(line)).toEqual(whole(line));
    });
  }
});

describe('the fast path steps aside for any other framing', () => {
  const event = '{"seq":3,"type":"note","time":"2026-01-01T00:00:00.000Z","data":{"a":1}';
  const cases: [string, string][] = [
    ['an escape inside `at`', `${event},"end":3,"at":"2026-01-01T00:00:00.000\\u005a"`],
    ['a non-ASCII character inside `at`', `${event},"end":3,"at":"2026-01-01T00:00:00.000Zé"`],
    ['a control character inside `at`', `${event},"end":3,"at":"2026-01-01T00:00:00.000Z\t"`],
    ['another key in place of `at`', `${event},"end":3,"when":"${T}"`],
    ['a space before `end`', `${event}, "end":3,"at":"${T}"`],
    ['a space inside `at`', `${event},"end":3, "at":"${T}"`],
    ['an `end` with a leading zero', `${event},"end":03`],
    ['an `end` of 16 digits', `${event},"end":1234567890123456`],
    ['an `end` written as a float', `${event},"end":3.0`],
    ['a negative `end`', `${event},"end":-3`],
    ['no `end` at all', `${event},"at":"${T}"`],
    ['an `at` key inside the event itself', `${event},"at":"x","end":3,"at":"${T}"`],
    ['an `end` key inside the event itself', `${event},"end":9,"end":3,"at":"${T}"`],
    ['a `start` key inside the event itself', `${event},"start":1,"start":2,"end":3,"at":"${T}"`],
    ['a `start` with a leading zero', `${event},"start":02,"end":3,"at":"${T}"`],
    // V8 also parses "Jan 1 2026 (comment)": a fast path that let these characters through
    // would return an `at` the whole-line parse does not (or a line it refuses).
    ['a non-ASCII character inside a parsable `at`', `${event},"end":3,"at":"Jan 1 2026 (é)"`],
    ['an escaped backslash inside a parsable `at`', `${event},"end":3,"at":"Jan 1 2026 (\\\\x)"`],
    ['a raw tab inside a parsable `at`', `${event},"end":3,"at":"Jan 1 2026 (\t)"`],
    ['an escaped quote inside a parsable `at`', `${event},"end":3,"at":"Jan 1 2026 (\\")"`],
    ['an `at` that opens the line', `"at":"${T}"`],
    ['an `end` that opens the line', `"end":3`],
  ];
  for (const [what, body] of cases) {
    it(`${what}: the whole-line parse decides`, () => {
      const line = sealLine(body);
      expect(fast(line)).toBeUndefined();
      expect(readEventLine(line, 0, line.length)).toEqual(whole(line));
    });
  }

  it('an escaped but valid `at` still reads, through the whole-line parse', () => {
    const line = sealLine(`${event},"end":3,"at":"2026-01-01T00:00:00.000\\u005a"`);
    expect(readEventLine(line, 0, line.length)?.at).toBe(T);
  });

  it('a `start` the writer did not frame (after `end`) is left to the whole-line parse', () => {
    const line = sealLine(`${event},"end":3,"start":2,"at":"${T}"`);
    expect(fast(line)).toBeUndefined();
    expect(readEventLine(line, 0, line.length)).toEqual(whole(line));
    expect(whole(line)?.start).toBe(2);
  });

  it('a line whose checksum does not match is no line, whatever its framing', () => {
    const [line] = batchLines([{ text: 'x' }], 0);
    const bad = Buffer.from(line!);
    const digit = bad.length - 3; // the last hex digit of the checksum
    bad[digit] = bad[digit] === 0x30 ? 0x31 : 0x30;
    expect(readEventLine(bad, 0, bad.length)).toBeUndefined();
    expect(whole(bad)).toBeUndefined();
  });
});
