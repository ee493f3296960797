import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32Table } from '../src/format.js';
import {
  crc32,
  crc32Utf8,
  decodeEventLine,
  FORMAT_NAME,
  FORMAT_VERSION,
  scanLog,
  settleTear,
} from '../src/index.js';
import { evs } from './helpers.js';
import { batchLines, headerLine, logOf } from './logs.js';

const b0 = evs(0, 2, true); // seqs 0-1
const b1 = evs(2, 3); // seqs 2-4
const b2 = evs(5, 1, true); // seq 5

function cat(...parts: (string | Buffer)[]): Buffer {
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
}

/** CRC-32 by its definition, bit by bit: what every faster form must equal. */
function bitwiseCrc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? 0xedb88320 ^ (crc >>> 1) : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

describe('crc32', () => {
  it('matches the IEEE check value and zlib on odd lengths', () => {
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
    expect(crc32(Buffer.from(''))).toBe(0);
    expect(crc32(Buffer.from('a'))).toBe(0xe8b7be43);
    expect(crc32(Buffer.from('hello, world!'), 0, 5)).toBe(crc32(Buffer.from('hello')));
  });

  it('equals the bit-by-bit definition on every length and offset (16-byte steps and the rest)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), fc.nat(80), fc.nat(80), (bytes, a, b) => {
        const start = Math.min(a, b, bytes.length);
        const end = Math.min(Math.max(a, b), bytes.length);
        expect(crc32(bytes, start, end)).toBe(bitwiseCrc32(bytes.subarray(start, end)));
      }),
      { numRuns: 2000 },
    );
  });

  it('gives the same answer by the table and natively, below, at and above the switch', () => {
    const lengths = fc.oneof(fc.integer({ min: 1000, max: 1050 }), fc.integer({ min: 1, max: 70_000 }));
    fc.assert(
      fc.property(lengths, fc.nat(64), fc.integer(), (length, offset, seed) => {
        const bytes = new Uint8Array(offset + length + 3);
        for (let i = 0; i < bytes.length; i++) bytes[i] = (seed + i * 2654435761) >>> 24;
        const expected = bitwiseCrc32(bytes.subarray(offset, offset + length));
        expect(crc32(bytes, offset, offset + length)).toBe(expected);
        expect(crc32Table(bytes, offset, offset + length)).toBe(expected);
        expect(crc32(Buffer.from(bytes), offset, offset + length)).toBe(expected);
      }),
      { numRuns: 40 },
    );
  });

  it('crc32Utf8 of any string (lone surrogates included) equals crc32 of its UTF-8 bytes', () => {
    const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: anyUnit }), fc.string({ unit: 'binary' })), (text) => {
        expect(crc32Utf8(text)).toBe(crc32(Buffer.from(text, 'utf8')));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('the line format', () => {
  it('writes jq-readable JSON objects that carry the batch framing', () => {
    const text = headerLine() + batchLines(b1);
    const lines = text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ format: FORMAT_NAME, version: FORMAT_VERSION, meta: { id: 's' } });
    expect(lines.slice(1).map((l) => [l.seq, l.start, l.end, l.at !== undefined])).toEqual([
      [2, undefined, 4, false],
      [3, 2, 4, false],
      [4, 2, 4, true],
    ]);
    for (const line of lines) expect(line.crc).toMatch(/^[0-9a-f]{8}$/);
  });

  it('rejects a line with one flipped byte', () => {
    const line = Buffer.from(batchLines([evs(0, 1)[0]!]).trimEnd(), 'utf8');
    expect(decodeEventLine(line, 0, line.length).ok).toBe(true);
    const flipped = Buffer.from(line);
    flipped[10] = flipped[10]! ^ 0x01;
    expect(decodeEventLine(flipped, 0, flipped.length)).toMatchObject({ ok: false, defect: 'checksum' });
  });

  it('keeps __proto__ in data as a plain key without touching prototypes', () => {
    const data = JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}');
    const log = cat(
      headerLine(),
      batchLines([{ seq: 0, type: 'turn/end', time: '2026-01-01T00:00:00.000Z', data }]),
    );
    const report = scanLog(log);
    const stored = report.batches[0]!.events[0]!.data as Record<string, unknown>;
    expect(Object.hasOwn(stored, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(stored)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('scanLog', () => {
  it('reads a clean log: every batch committed, no tail', () => {
    const log = logOf([b0, b1, b2]);
    const report = scanLog(log);
    expect(report.problem).toBeUndefined();
    expect(report.torn).toBeUndefined();
    expect(report.batches.map((b) => b.events.map((e) => e.seq))).toEqual([[0, 1], [2, 3, 4], [5]]);
    expect(report.committedBytes).toBe(log.length);
    expect(report.nextSeq).toBe(6);
    expect(report.header?.meta.id).toBe('s');
  });

  it('header only: a valid session with no events', () => {
    const report = scanLog(Buffer.from(headerLine()));
    expect(report.problem).toBeUndefined();
    expect(report.torn).toBeUndefined();
    expect(report.nextSeq).toBe(0);
    expect(report.batches).toEqual([]);
  });

  it('empty file: CORRUPT at offset 0 (a published log always has a header)', () => {
    expect(scanLog(Buffer.alloc(0)).problem).toMatchObject({ kind: 'corrupt', offset: 0 });
  });

  it('a torn header is CORRUPT at offset 0', () => {
    const header = headerLine();
    expect(scanLog(Buffer.from(header.slice(0, 20))).problem).toMatchObject({ kind: 'corrupt', offset: 0 });
    expect(scanLog(Buffer.from(`{"x":1}\n${batchLines(b0)}`)).problem).toMatchObject({
      kind: 'corrupt',
      offset: 0,
    });
  });

  it('an unknown newer format version is unsupported-format', () => {
    const newer = `${JSON.stringify({ format: FORMAT_NAME, version: FORMAT_VERSION + 1, meta: { id: 's' } })}\n`;
    expect(scanLog(Buffer.from(newer)).problem).toMatchObject({
      kind: 'unsupported-format',
      version: FORMAT_VERSION + 1,
    });
  });

  // Logs are built inside each test, not while the file is collected: code run at collection
  // counts as "static" for mutation testing (pnpm mutate), which then runs every test per mutant.
  const committedLog = () => logOf([b0]);
  const nextBatch = () => Buffer.from(batchLines(b1), 'utf8');
  const tails: [string, (next: Buffer) => Buffer, string][] = [
    ['torn line (a batch cut inside its first line)', (next) => next.subarray(0, 30), 'partial-line'],
    ['a valid line without its newline', (next) => next.subarray(0, next.indexOf(10)), 'no-newline'],
    ['closing line without newline', () => Buffer.from(batchLines(b2).trimEnd()), 'no-newline'],
    ['NUL-filled tail', () => Buffer.alloc(300), 'nul'],
    ['NUL line with newline', () => Buffer.from('\0\0\0\0\n'), 'nul'],
    ['garbage tail', () => Buffer.from('qwertyuiop\nasdf\n'), 'garbage'],
    [
      'partial batch (complete lines, closing line missing)',
      (next) => next.subarray(0, next.lastIndexOf(10, next.length - 2) + 1),
      'partial-batch',
    ],
    [
      'partial batch then zeros',
      (next) => cat(next.subarray(0, next.indexOf(10) + 1), Buffer.alloc(64)),
      'nul',
    ],
    [
      'first line zeroed, later lines of the same batch intact (ALICE)',
      (next) => cat(Buffer.alloc(next.indexOf(10)), next.subarray(next.indexOf(10))),
      'nul',
    ],
  ];
  for (const [name, tailOf, reason] of tails) {
    it(`torn tail: ${name}`, () => {
      const committed = committedLog();
      const tail = tailOf(nextBatch());
      const report = scanLog(cat(committed, tail));
      expect(report.problem).toBeUndefined();
      expect(report.batches.map((b) => b.events.map((e) => e.seq))).toEqual([[0, 1]]);
      expect(report.torn).toEqual({ offset: committed.length, length: tail.length, reason });
      expect(report.committedBytes).toBe(committed.length);
      expect(report.nextSeq).toBe(2);
    });
  }

  it('a corrupt line before the last boundary is CORRUPT with its byte offset', () => {
    const log = logOf([b0, b1, b2]);
    const lineStart = Buffer.byteLength(headerLine() + batchLines(b0));
    const damaged = Buffer.from(log);
    damaged[lineStart + 5] = 0x7a; // inside the first line of b1
    const report = scanLog(damaged);
    expect(report.problem).toMatchObject({ kind: 'corrupt', offset: lineStart, seq: 2 });
    expect(report.torn).toBeUndefined();
  });

  it('garbage followed by a valid batch is corruption, not a tail', () => {
    const log = cat(logOf([b0]), 'garbage\n', batchLines(b1));
    expect(scanLog(log).problem).toMatchObject({ kind: 'corrupt', offset: logOf([b0]).length });
  });

  it('a seq gap between complete batches is CORRUPT', () => {
    const log = cat(logOf([b0]), batchLines(b2));
    expect(scanLog(log).problem).toMatchObject({ kind: 'corrupt', offset: logOf([b0]).length, seq: 2 });
  });

  it('a repeated batch is CORRUPT', () => {
    const log = cat(logOf([b0]), batchLines(b0));
    expect(scanLog(log).problem?.kind).toBe('corrupt');
  });

  it('an unfinished batch followed by another batch is CORRUPT', () => {
    const partial = Buffer.from(batchLines(b1), 'utf8');
    const first = partial.subarray(0, partial.indexOf(10) + 1);
    const log = cat(logOf([b0]), first, batchLines(evs(2, 1, true)));
    expect(scanLog(log).problem).toMatchObject({ kind: 'corrupt', offset: logOf([b0]).length });
  });

  it('an over-long garbage run does not grow memory without bound and is a tail', () => {
    const log = cat(logOf([b0]), Buffer.alloc(5000, 0x41));
    const report = scanLog(log, { maxLineBytes: 1000 });
    expect(report.torn).toMatchObject({ reason: 'partial-line', length: 5000 });
  });

  it('headerless scans start at a known boundary', () => {
    const log = logOf([b0, b1]);
    const start = Buffer.byteLength(headerLine() + batchLines(b0));
    const report = scanLog(log.subarray(start), { start: { offset: 0, nextSeq: 2 } });
    expect(report.batches.map((b) => b.events.map((e) => e.seq))).toEqual([[2, 3, 4]]);
    expect(scanLog(log.subarray(start), { start: { offset: 0, nextSeq: 7 } }).problem?.kind).toBe('corrupt');
  });
});

describe('settleTear', () => {
  // Built per test, not at collection: see `committedLog` above.
  const tornLog = () => {
    const torn = logOf([evs(0, 1, true)]);
    return { torn, end: scanLog(Buffer.concat([torn, Buffer.from('{"seq":1,"ty')])) };
  };
  it('leaves a tear past the committed size, or with no committed size known, a tail', () => {
    const { torn, end } = tornLog();
    expect(end.torn).toMatchObject({ offset: torn.length });
    expect(settleTear(end, undefined)).toBe(end);
    expect(settleTear(end, torn.length)).toBe(end);
    expect(settleTear(end, torn.length - 1)).toBe(end);
  });
  it('makes a tear inside the committed size CORRUPT at its offset', () => {
    const { torn, end } = tornLog();
    const settled = settleTear(end, torn.length + 5);
    expect(settled.torn).toBeUndefined();
    expect(settled.problem).toMatchObject({ kind: 'corrupt', offset: torn.length, seq: 1 });
    expect(settled.committedBytes).toBe(end.committedBytes);
  });
  it('leaves an end without a tear, or already corrupt, as it is', () => {
    const { torn } = tornLog();
    const whole = scanLog(torn);
    expect(settleTear(whole, 10_000)).toBe(whole);
  });
});

describe('damage followed by intact lines (which batch do they belong to?)', () => {
  /** A line sealed as the writer seals it: `body` without its closing brace, then the checksum. */
  const sealed = (value: object) => {
    const body = JSON.stringify(value).slice(0, -1);
    return `${body},"crc":"${crc32Utf8(body).toString(16).padStart(8, '0')}"}\n`;
  };
  const T = '2026-01-01T00:00:00.000Z';
  const damage = (log: Buffer, at: number) => {
    const out = Buffer.from(log);
    out[at + 3] = out[at + 3]! ^ 0x5a;
    return out;
  };

  it('a damaged one-event batch before an intact one-event batch is CORRUPT, not a torn last write', () => {
    const log = logOf([evs(0, 1, true), evs(1, 1, true)]);
    const at = log.indexOf('{"seq":0');
    const report = scanLog(damage(log, at));
    expect(report.problem).toMatchObject({ kind: 'corrupt', offset: at, seq: 0 });
    expect(report.torn).toBeUndefined();
  });

  it('a damaged first line of the last batch, its other lines intact, is still a torn last write', () => {
    const log = logOf([evs(0, 1, true), evs(1, 3, true)]);
    const at = log.indexOf('{"seq":1');
    const report = scanLog(damage(log, at));
    expect(report.problem).toBeUndefined();
    expect(report.batches.map((b) => b.events.map((e) => e.seq))).toEqual([[0]]);
    expect(report.torn).toMatchObject({ offset: at });
  });

  it('keeps reading version 1 logs, whose lines do not say where their batch starts, as before', () => {
    const header = sealed({ format: FORMAT_NAME, version: 1, meta: { id: 's', createdAt: T }, init: {} });
    const line = (seq: number) => sealed({ seq, type: 'turn/end', time: T, data: { seq }, end: seq, at: T });
    const log = Buffer.from(header + line(0) + line(1), 'utf8');
    expect(scanLog(log).batches).toHaveLength(2);
    expect(scanLog(log).header?.version).toBe(1);
    const at = log.indexOf('{"seq":0');
    const report = scanLog(damage(log, at));
    // Version 1 cannot tell the two apart: the damage reads as a torn last write (the sidecar,
    // when it counted these bytes, still turns that into CORRUPT: see settleTear).
    expect(report.problem).toBeUndefined();
    expect(report.torn).toMatchObject({ offset: at });
  });
});
