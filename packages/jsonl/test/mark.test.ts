// The stream mark of read(): whatever the chunking, it is the end of the last committed batch and
// the bytes just before it, as they are in the file.
import { describe, expect, it } from 'vitest';
import { LogScanner } from '../src/index.js';
import { MARK_BYTES, MarkKeeper, markMatches } from '../src/mark.js';
import { ev } from './helpers.js';
import { batchLines, headerLine } from './logs.js';

// Built inside each test, not at collection: code run at collection counts as "static" for
// mutation testing (pnpm mutate), which then runs every test for each such mutant.
function theLog(): Buffer {
  return Buffer.from(
    headerLine() +
      batchLines([ev(0)]) +
      batchLines([ev(1), ev(2, 'turn/end', { text: 'x'.repeat(300) })]) +
      batchLines([ev(3, 'turn/end', { text: 'y' })]),
    'utf8',
  );
}

function markAfter(chunkSize: number, bytes: Uint8Array = theLog()) {
  const scanner = new LogScanner();
  const keeper = new MarkKeeper();
  for (let position = 0; position < bytes.length; position += chunkSize) {
    const chunk = bytes.subarray(position, Math.min(bytes.length, position + chunkSize));
    keeper.advance(chunk, position, scanner.push(chunk));
  }
  return keeper;
}

describe('MarkKeeper', () => {
  it('keeps the last bytes of the last committed batch, for every chunk size', () => {
    const log = theLog();
    for (const size of [1, 2, 7, 18, 63, 64, 65, 100, 333, log.length]) {
      const mark = markAfter(size).mark!;
      expect(mark.offset).toBe(log.length);
      expect(mark.nextSeq).toBe(4);
      expect(mark.tail.length).toBe(MARK_BYTES);
      expect(markMatches(mark, log.subarray(log.length - MARK_BYTES))).toBe(true);
    }
  });

  it('has no mark before a batch is committed, and ignores a torn end', () => {
    const log = theLog();
    expect(markAfter(10, Buffer.from(headerLine(), 'utf8')).mark).toBeUndefined();
    const torn = Buffer.concat([log, Buffer.from('{"seq":4,"type":"x"')]);
    for (const size of [1, 5, 64, torn.length]) expect(markAfter(size, torn).mark!.offset).toBe(log.length);
  });

  it('does not match other bytes at the same place (another append time or event)', () => {
    const mark = markAfter(50).mark!;
    const other = Buffer.from(batchLines([ev(3, 'turn/end', { text: 'y' })], '2026-01-01T00:00:02.000Z'));
    expect(markMatches(mark, other.subarray(other.length - MARK_BYTES))).toBe(false);
  });

  it('rewinds to the mark, with its tail as the bytes before the next chunk', () => {
    const log = theLog();
    const keeper = markAfter(37);
    expect(keeper.rewind()).toBe(log.length);
    const more = Buffer.from(batchLines([ev(4, 'turn/end')]), 'utf8');
    const scanner = new LogScanner({ start: { offset: log.length, nextSeq: 4 }, formatVersion: 2 });
    // The new batch ends 10 bytes into the next chunk: most of its mark comes from the one before.
    const cut = more.length - 10;
    keeper.advance(more.subarray(0, cut), log.length, scanner.push(more.subarray(0, cut)));
    keeper.advance(more.subarray(cut), log.length + cut, scanner.push(more.subarray(cut)));
    const whole = Buffer.concat([log, more]);
    expect(keeper.mark!.offset).toBe(whole.length);
    expect(markMatches(keeper.mark!, whole.subarray(whole.length - MARK_BYTES))).toBe(true);
  });
});
