// The tail scanner at its edges: lines carried across chunks, the line-length limit, what follows
// damage, the first problem kept, and the exact messages the store reports. Every log is built
// inside its test (not while the file is collected), so the mutation run can tell tests apart.
import { DEFAULT_MAX_EVENT_BYTES, type SessionEvent } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { LogScanner, type ScanOptions, type ScanReport, scanLog, settleTear } from '../src/index.js';
import { ev, evs } from './helpers.js';
import { batchLines, headerLine } from './logs.js';

/** The lines of a batch, each with its newline. */
function linesOf(events: SessionEvent[]): string[] {
  return batchLines(events)
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => `${line}\n`);
}

function bytes(...parts: string[]): Buffer {
  return Buffer.from(parts.join(''), 'latin1');
}

/** A scan fed `size` bytes at a time. */
function scanChunked(log: Buffer, size: number, options?: ScanOptions): ScanReport {
  const scanner = new LogScanner(options);
  const batches = [];
  for (let i = 0; i < log.length; i += size) batches.push(...scanner.push(log.subarray(i, i + size)));
  return { ...scanner.finish(), batches };
}

/** Header and the committed batch of seqs 0–1 (ends with a turn). */
function committed(): { text: string; end: number } {
  const text = headerLine() + batchLines(evs(0, 2, true));
  return { text, end: Buffer.byteLength(text) };
}

describe('scanning in chunks', () => {
  it('gives the same batches, ends and torn tail in chunks of every size as in one piece', () => {
    const { text } = committed();
    const torn = linesOf(evs(5, 3));
    const log = bytes(text, batchLines(evs(2, 3)), torn[0]!, torn[1]!.slice(0, 20));
    const whole = scanLog(log);
    expect(whole.nextSeq).toBe(5);
    expect(whole.torn?.reason).toBe('partial-line');
    for (const size of [1, 2, 3, 7, 64, 100, log.length - 1]) {
      const chunked = scanChunked(log, size);
      expect(chunked, `chunks of ${size}`).toEqual(whole);
    }
  });

  it('keeps the first anomaly of a mixed tail carried across chunks: text then NUL bytes is a partial line', () => {
    const { text, end } = committed();
    const log = bytes(text, 'ab', '\0\0\0');
    for (const size of [1, 2, end + 1])
      expect(scanChunked(log, size).torn).toEqual({ offset: end, length: 5, reason: 'partial-line' });
    // A single chunk holding text and NULs is not a NUL run either.
    expect(scanLog(bytes(text, 'a\0')).torn?.reason).toBe('partial-line');
  });

  it('reads a tail of NUL bytes as a NUL run, also as the first bytes of a headerless scan', () => {
    expect(scanLog(bytes('\0\0\0'), { start: { offset: 0, nextSeq: 0 } }).torn).toEqual({
      offset: 0,
      length: 3,
      reason: 'nul',
    });
  });

  it('exposes the header once its line is read, and failed once a problem is found', () => {
    const { text, end } = committed();
    const scanner = new LogScanner();
    expect(scanner.headerLine).toBeUndefined();
    expect(scanner.failed).toBe(false);
    scanner.push(bytes(text));
    expect(scanner.headerLine?.endOffset).toBe(Buffer.byteLength(headerLine()));
    expect(scanner.headerLine?.header.meta.id).toBe('s');
    expect(scanner.failed).toBe(false);
    scanner.push(bytes(batchLines(evs(5, 1))));
    expect(scanner.failed).toBe(true);
    expect(scanner.finish().problem?.offset).toBe(end);
  });

  it('a headerless scan reports no header at all', () => {
    const end = scanLog(bytes(batchLines(evs(2, 1))), { start: { offset: 0, nextSeq: 2 } });
    expect(end.nextSeq).toBe(3);
    expect(Object.hasOwn(end, 'header')).toBe(false);
    expect(Object.hasOwn(scanLog(bytes(committed().text)), 'header')).toBe(true);
  });
});

describe('the line-length limit', () => {
  /** A log whose last batch is one long line; its length without the newline. */
  function withLongLine(): { log: Buffer; start: number; longest: number } {
    const { text, end } = committed();
    const long = batchLines([ev(2, 'user/message', { text: 'x'.repeat(400) })]);
    return { log: bytes(text, long), start: end, longest: Buffer.byteLength(long) - 1 };
  }

  it('accepts a line of exactly maxLineBytes, whole or carried across chunks', () => {
    const { log, longest } = withLongLine();
    for (const report of [
      scanLog(log, { maxLineBytes: longest }),
      scanChunked(log, 7, { maxLineBytes: longest }),
    ]) {
      expect(report.nextSeq).toBe(3);
      expect(report.torn).toBeUndefined();
    }
  });

  it('takes a line one byte longer for garbage, whole or carried across chunks', () => {
    const { log, start, longest } = withLongLine();
    for (const report of [
      scanLog(log, { maxLineBytes: longest - 1 }),
      scanChunked(log, 7, { maxLineBytes: longest - 1 }),
    ]) {
      expect(report.nextSeq).toBe(2);
      expect(report.torn).toEqual({ offset: start, length: longest + 1, reason: 'garbage' });
    }
  });

  it('an over-long line without its newline is a partial line, and an over-long NUL run is a NUL run', () => {
    const { log, start, longest } = withLongLine();
    const cut = log.subarray(0, log.length - 1);
    expect(scanChunked(cut, 7, { maxLineBytes: longest - 1 }).torn).toEqual({
      offset: start,
      length: longest,
      reason: 'partial-line',
    });
    const nul = Buffer.concat([log.subarray(0, start), Buffer.alloc(longest + 10)]);
    expect(scanChunked(nul, 7, { maxLineBytes: longest - 1 }).torn).toEqual({
      offset: start,
      length: longest + 10,
      reason: 'nul',
    });
  });

  it('a header line over the limit is a corrupt header, also at the end of the file', () => {
    const header = headerLine();
    const problem = { kind: 'corrupt', offset: 0, message: 'bad header: the first line is too long' };
    expect(scanLog(bytes(header), { maxLineBytes: 10 }).problem).toEqual(problem);
    expect(scanChunked(bytes(header, batchLines(evs(0, 1))), 5, { maxLineBytes: 10 }).problem).toEqual(
      problem,
    );
  });

  it('by default reads a line holding the largest event core accepts (the limit leaves room for framing)', () => {
    // {"seq":2,"type":"user/message","time":"…","data":{"text":"…"}} is 82 bytes besides the text.
    const overhead = Buffer.byteLength(JSON.stringify(ev(2, 'user/message', { text: '' })));
    const largest = ev(2, 'user/message', { text: 'x'.repeat(DEFAULT_MAX_EVENT_BYTES - overhead) });
    const line = batchLines([largest]);
    expect(Buffer.byteLength(line)).toBeGreaterThan(DEFAULT_MAX_EVENT_BYTES);
    const report = scanLog(Buffer.from(committed().text + line));
    expect(report.torn).toBeUndefined();
    expect(report.nextSeq).toBe(3);
  });
});

describe('what may follow damage', () => {
  it('keeps the first problem: a seq gap is not replaced by later damage', () => {
    const { text, end } = committed();
    const log = bytes(text, batchLines(evs(5, 1)), 'garbage\n', batchLines(evs(5, 1)));
    expect(scanLog(log).problem).toEqual({
      kind: 'corrupt',
      offset: end,
      seq: 2,
      message: 'seq gap: expected seq 2, found 5',
    });
  });

  it('an unfinished batch interrupted by a line with the right seq but another end is lost data', () => {
    const { text, end } = committed();
    const [a, b] = linesOf(evs(2, 3));
    const other = linesOf(evs(4, 3))[0]!; // seq 4, the next one expected, but end 6, not 4
    expect(scanLog(bytes(text, a!, b!, other)).problem).toEqual({
      kind: 'corrupt',
      offset: end,
      seq: 2,
      message: 'damaged data (partial-batch) is followed by valid events (seq 4): committed data was lost',
    });
  });

  it('an unfinished batch interrupted by a repeated line (same end, seq not the next) is lost data', () => {
    const { text } = committed();
    const [a, b] = linesOf(evs(2, 3));
    expect(scanLog(bytes(text, a!, b!, b!)).problem?.message).toBe(
      'damaged data (partial-batch) is followed by valid events (seq 3): committed data was lost',
    );
  });

  it('after damage inside an unfinished batch, its later lines are torn; a repeat of an earlier one is not', () => {
    const { text, end } = committed();
    const [a, b, c] = linesOf(evs(2, 3));
    const tail = bytes(a!, b!, 'garbage\n', c!);
    expect(scanLog(bytes(text, tail.toString('latin1'))).torn).toEqual({
      offset: end,
      length: tail.length,
      reason: 'garbage',
    });
    expect(scanLog(bytes(text, a!, b!, 'garbage\n', b!)).problem?.kind).toBe('corrupt');
  });

  it('after damage with no batch pending, lines must share one end and grow in seq', () => {
    const { text } = committed();
    const [, b] = linesOf(evs(2, 3)); // seq 3, start 2, end 4
    expect(scanLog(bytes(text, 'garbage\n', b!)).torn?.reason).toBe('garbage');
    const otherEnd = linesOf(evs(2, 5))[3]!; // seq 5, start 2, end 6
    expect(scanLog(bytes(text, 'garbage\n', b!, otherEnd)).problem?.kind).toBe('corrupt');
    expect(scanLog(bytes(text, 'garbage\n', b!, b!)).problem?.kind).toBe('corrupt');
  });

  it('keeps the first damage of a tail: garbage then a NUL line is garbage', () => {
    const { text, end } = committed();
    expect(scanLog(bytes(text, 'garbage\n', '\0\0\0\n')).torn).toEqual({
      offset: end,
      length: 12,
      reason: 'garbage',
    });
  });

  it('format 1 (the headerless default): a batch first line after damage is lost data, not a tear', () => {
    const first = linesOf(evs(2, 3))[0]!; // seq 2 = the next seq: only a write's first line has it
    expect(scanLog(bytes('garbage\n', first), { start: { offset: 0, nextSeq: 2 } }).problem?.kind).toBe(
      'corrupt',
    );
  });

  it('format 2 checks where a line after damage says its batch began; format 1 cannot', () => {
    const line = linesOf(evs(1, 4))[2]!; // seq 3 of a batch 1–4: start 1, not the committed end 2
    const tail = bytes('garbage\n', line);
    const start = { offset: 0, nextSeq: 2 };
    expect(scanLog(tail, { start, formatVersion: 2 }).problem?.kind).toBe('corrupt');
    expect(scanLog(tail, { start }).torn?.reason).toBe('garbage');
  });
});

describe('the messages a damaged log is reported with', () => {
  it('names an empty log, an incomplete header, a bad header and a newer format', () => {
    expect(scanLog(Buffer.alloc(0)).problem?.message).toBe('the log is empty (no header)');
    expect(scanLog(bytes('{"format"')).problem?.message).toBe('the header line is incomplete');
    expect(scanLog(bytes('{"format":"x"}\n')).problem?.message).toMatch(/^bad header: \S/);
    const header = JSON.parse(headerLine()) as { version: number };
    const newer = `${JSON.stringify({ ...header, version: header.version + 1 })}\n`;
    expect(scanLog(bytes(newer)).problem?.message).toBe(
      `format version ${header.version + 1} is newer than this code knows`,
    );
  });

  it('settleTear names the tear inside the committed bytes, and leaves a log that has a problem as it is', () => {
    const { text, end } = committed();
    const scanned = scanLog(bytes(text, 'garbage\n'));
    expect(settleTear(scanned, end + 1).problem?.message).toBe(
      `damaged data (garbage) at byte ${end}, inside the ${end + 1} bytes the summary recorded as committed: committed data was lost`,
    );
    const both = { ...scanned, problem: { kind: 'corrupt' as const, offset: 3, message: 'earlier' } };
    expect(settleTear(both, end + 1)).toBe(both);
  });
});
