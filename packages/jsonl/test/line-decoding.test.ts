// How a single line of the log decodes, and why it is refused when it is not a line this code
// wrote: the reasons are what `verify` and the scanner report, so each refusal is pinned here.
import { describe, expect, it } from 'vitest';
import {
  CRC_SUFFIX_BYTES,
  checksumMatches,
  crc32,
  crc32Utf8,
  decodeEventLine,
  decodeHeaderLine,
  FORMAT_NAME,
  FORMAT_VERSION,
  parseInit,
  readEventLine,
} from '../src/format.js';

const T = '2026-01-01T00:00:00.000Z';

/** `value` sealed as the writer seals a line (without the newline), as bytes. */
function sealed(value: object): Buffer {
  const body = JSON.stringify(value).slice(0, -1);
  return Buffer.from(`${body},"crc":"${crc32Utf8(body).toString(16).padStart(8, '0')}"}`, 'utf8');
}

/** Raw text as a line, no checksum applied. */
const raw = (text: string) => Buffer.from(text, 'utf8');

const decode = (line: Buffer) => decodeEventLine(line, 0, line.length);
const read = (line: Buffer) => readEventLine(line, 0, line.length);
const header = (line: Buffer) => decodeHeaderLine(line, 0, line.length);

describe('an event line', () => {
  it('decodes the event, its batch bounds and the append time', () => {
    const closing = sealed({ seq: 3, type: 't', time: T, data: { a: 1 }, start: 2, end: 3, at: T });
    const expected = { event: { seq: 3, type: 't', time: T, data: { a: 1 } }, end: 3, start: 2, at: T };
    expect(decode(closing)).toEqual({ ok: true, value: expected });
    expect(read(closing)).toEqual(expected);
    const opening = sealed({ seq: 2, type: 't', time: T, data: null, end: 3 });
    expect(read(opening)).toEqual({ event: { seq: 2, type: 't', time: T, data: null }, end: 3 });
    expect(read(opening)).not.toHaveProperty('start');
    expect(read(opening)).not.toHaveProperty('at');
  });

  // A lone event is a batch of one: its only line closes it (seq = end) and carries `at`.
  it('accepts seq 0 and a one-event batch', () => {
    expect(read(sealed({ seq: 0, type: 't', time: T, data: 0, end: 0, at: T }))?.event.seq).toBe(0);
  });

  it.each<[string, object, string]>([
    ['a negative seq', { seq: -1, type: 't', time: T, data: 1, end: 0, at: T }, 'bad seq or end'],
    ['a fractional seq', { seq: 0.5, type: 't', time: T, data: 1, end: 1 }, 'bad seq or end'],
    ['a missing end', { seq: 0, type: 't', time: T, data: 1, at: T }, 'bad seq or end'],
    ['an end before the seq', { seq: 2, type: 't', time: T, data: 1, end: 1, at: T }, 'bad seq or end'],
    ['a start equal to the seq', { seq: 2, type: 't', time: T, data: 1, start: 2, end: 3 }, 'bad start'],
    ['a start that is no seq', { seq: 2, type: 't', time: T, data: 1, start: '1', end: 3 }, 'bad start'],
    ['a missing type', { seq: 0, time: T, data: 1, end: 1 }, 'an event needs type, time and data'],
    ['an empty type', { seq: 0, type: '', time: T, data: 1, end: 1 }, 'an event needs type, time and data'],
    [
      'a time that is no string',
      { seq: 0, type: 't', time: 5, data: 1, end: 1 },
      'an event needs type, time and data',
    ],
    ['no data', { seq: 0, type: 't', time: T, end: 1 }, 'an event needs type, time and data'],
    [
      'a closing line without at',
      { seq: 1, type: 't', time: T, data: 1, end: 1 },
      'the closing line of a batch needs `at`',
    ],
    [
      'an at that is no time',
      { seq: 0, type: 't', time: T, data: 1, end: 1, at: 'soon' },
      '`at` is not a time',
    ],
  ])('refuses %s as a shape defect', (_, value, detail) => {
    const line = sealed(value);
    expect(decode(line)).toEqual({ ok: false, defect: 'shape', detail });
    expect(read(line)).toBeUndefined();
  });

  // `data: null` is data; only an absent key is missing data.
  it('takes a null data as present', () => {
    expect(read(sealed({ seq: 0, type: 't', time: T, data: null, end: 0, at: T }))?.event.data).toBeNull();
  });

  it('refuses a checksummed line that is not a JSON object', () => {
    const body = '[1,2';
    const line = raw(`${body},"crc":"${crc32Utf8(body).toString(16).padStart(8, '0')}"}`);
    expect(decode(line)).toMatchObject({ ok: false, defect: 'json' });
    expect(read(line)).toBeUndefined();
    const notObject = sealed(['x']); // `["x"` + suffix: not JSON either
    expect(decode(notObject).ok).toBe(false);
  });

  it('decodes a line in the middle of a larger buffer, and from a plain Uint8Array', () => {
    const line = sealed({ seq: 0, type: 't', time: T, data: 'é', end: 0, at: T });
    const padded = Buffer.concat([raw('garbage\n'), line, raw('\nmore')]);
    expect(decodeEventLine(padded, 8, 8 + line.length)).toMatchObject({ ok: true });
    const view = new Uint8Array(padded.buffer.slice(padded.byteOffset, padded.byteOffset + padded.length), 8);
    expect(readEventLine(view, 0, line.length)?.event.data).toBe('é');
    expect(decodeEventLine(view, 0, line.length)).toMatchObject({ ok: true });
  });
});

describe('the checksum suffix', () => {
  const line = sealed({ seq: 0, type: 't', time: T, data: 1, end: 0, at: T });

  it('matches a sealed line and nothing shorter than a suffix and a body', () => {
    expect(checksumMatches(line, 0, line.length)).toBe(true);
    expect(checksumMatches(raw('{}'), 0, 2)).toBe(false);
    const bare = raw(`{${'"'}${',"crc":"00000000"}'.slice(1)}`); // exactly CRC_SUFFIX_BYTES + 1
    expect(bare.length).toBeLessThan(CRC_SUFFIX_BYTES + 2);
    expect(checksumMatches(bare, 0, bare.length)).toBe(false);
  });

  // The checksum covers a body of at least two bytes (`{` and one more); one byte is no line.
  it('checks a body of two bytes and refuses a body of one even with its right checksum', () => {
    const line = (body: string) => raw(`${body},"crc":"${crc32Utf8(body).toString(16).padStart(8, '0')}"}`);
    const two = line('{"');
    expect(two.length).toBe(CRC_SUFFIX_BYTES + 2);
    expect(checksumMatches(two, 0, two.length)).toBe(true);
    const one = line('{');
    expect(checksumMatches(one, 0, one.length)).toBe(false);
  });

  it('refuses a suffix with the wrong framing or uppercase or non-hex digits', () => {
    const text = line.toString('utf8');
    const hex = text.slice(-10, -2);
    const variants = [
      text.replace(',"crc":"', ',"crc":['),
      `${text.slice(0, -1)}]`,
      `${text.slice(0, -2)}'}`,
      text.replace(hex, hex.toUpperCase().replace(/^[0-9]/, 'A')),
      text.replace(hex, `${hex.slice(0, 7)}g`),
      text.replace(hex, `${hex.slice(0, 7)}/`),
      text.replace(hex, `${hex.slice(0, 7)}:`),
    ];
    for (const variant of variants) {
      const bytes = raw(variant);
      expect(checksumMatches(bytes, 0, bytes.length)).toBe(false);
    }
  });

  it('reads every hex digit of the stored value', () => {
    for (const body of ['{"x":0', '{"x":1', '{"x":2', '{"x":3', '{"y":"abcdef"', '{"q":9']) {
      const crc = crc32Utf8(body);
      const good = raw(`${body},"crc":"${crc.toString(16).padStart(8, '0')}"}`);
      expect(checksumMatches(good, 0, good.length)).toBe(true);
      const off = raw(`${body},"crc":"${((crc ^ 1) >>> 0).toString(16).padStart(8, '0')}"}`);
      expect(checksumMatches(off, 0, off.length)).toBe(false);
    }
  });
});

describe('a header line', () => {
  const meta = { id: 's', createdAt: T };

  it('decodes meta and the summary patch of create', () => {
    const line = sealed({
      format: FORMAT_NAME,
      version: FORMAT_VERSION,
      meta: { ...meta, cwd: '/w', parent: { id: 'p', seq: 4 } },
      init: { title: 'x', tags: ['a'] },
    });
    expect(header(line)).toEqual({
      ok: true,
      value: {
        version: FORMAT_VERSION,
        meta: {
          id: 's',
          createdAt: T,
          formatVersion: FORMAT_VERSION,
          cwd: '/w',
          parent: { id: 'p', seq: 4 },
        },
        init: { title: 'x', tags: ['a'] },
      },
    });
  });

  it('reads every older version', () => {
    for (let version = 1; version <= FORMAT_VERSION; version++) {
      const decoded = header(sealed({ format: FORMAT_NAME, version, meta, init: {} }));
      expect(decoded).toMatchObject({ ok: true, value: { version, meta: { formatVersion: version } } });
    }
  });

  // A newer writer may frame lines differently, so its header is recognised before any checksum.
  it('recognises a newer version even without a valid checksum', () => {
    const newer = raw(JSON.stringify({ format: FORMAT_NAME, version: FORMAT_VERSION + 1, meta }));
    expect(header(newer)).toEqual({
      ok: false,
      defect: 'newer-version',
      version: FORMAT_VERSION + 1,
      detail: `format version ${FORMAT_VERSION + 1}`,
    });
    expect(header(raw(JSON.stringify({ format: 'other', version: FORMAT_VERSION + 1 })))).toMatchObject({
      defect: 'checksum',
    });
    expect(
      header(raw(JSON.stringify({ format: FORMAT_NAME, version: String(FORMAT_VERSION + 1) }))),
    ).toMatchObject({
      defect: 'checksum',
    });
  });

  it.each<[string, object]>([
    ['another format', { format: 'other', version: 1, meta }],
    ['version 0', { format: FORMAT_NAME, version: 0, meta }],
    ['a fractional version', { format: FORMAT_NAME, version: 1.5, meta }],
    ['a version as text', { format: FORMAT_NAME, version: '1', meta }],
  ])('refuses %s as not a log', (_, value) => {
    expect(header(sealed(value))).toEqual({
      ok: false,
      defect: 'not-a-log',
      detail: 'the first line is not a tidemark session header',
    });
  });

  it.each<[string, unknown]>([
    ['no meta', undefined],
    ['a meta list', [meta]],
    ['an id that is no string', { id: 1, createdAt: T }],
    ['a createdAt that is no string', { id: 's', createdAt: 1 }],
    ['a createdAt that is no time', { id: 's', createdAt: 'yesterday' }],
    ['a cwd that is no string', { ...meta, cwd: 1 }],
    ['a parent that is no object', { ...meta, parent: 'p' }],
    ['a parent without an id', { ...meta, parent: { seq: 1 } }],
    ['a parent seq that is no number', { ...meta, parent: { id: 'p', seq: '1' } }],
  ])('refuses %s as a malformed meta', (_, badMeta) => {
    expect(header(sealed({ format: FORMAT_NAME, version: FORMAT_VERSION, meta: badMeta }))).toEqual({
      ok: false,
      defect: 'shape',
      detail: 'the header meta is malformed',
    });
  });

  it('passes checksum and JSON defects through', () => {
    const line = sealed({ format: FORMAT_NAME, version: FORMAT_VERSION, meta });
    const flipped = Buffer.from(line);
    flipped[3] = flipped[3]! ^ 1;
    expect(header(flipped)).toEqual({ ok: false, defect: 'checksum', detail: 'checksum mismatch' });
  });
});

describe('the summary patch stored in a header', () => {
  // A hostile file cannot inject fields, or values of the wrong type, into a summary.
  it('keeps only well-typed fields', () => {
    expect(parseInit({ title: 't', firstPrompt: 'p', tags: ['a', 'b'], attrs: { k: 1 }, extra: 1 })).toEqual({
      title: 't',
      firstPrompt: 'p',
      tags: ['a', 'b'],
      attrs: { k: 1 },
    });
    expect(parseInit({ title: 1, firstPrompt: null, tags: ['a', 2], attrs: [1] })).toEqual({});
    expect(parseInit({ tags: 'a', attrs: null })).toEqual({});
    expect(parseInit(['title'])).toEqual({});
    expect(parseInit(undefined)).toEqual({});
  });
});

describe('crc32 over part of a buffer', () => {
  it('covers exactly bytes[start..end) on both the 8-byte and the byte-wise path', () => {
    const bytes = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz', 'utf8');
    for (const [start, end] of [
      [0, 36],
      [1, 9],
      [3, 20],
      [7, 8],
      [5, 5],
    ] as const) {
      expect(crc32(bytes, start, end)).toBe(crc32(Buffer.from(bytes.subarray(start, end))));
    }
  });
});
