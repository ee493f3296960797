import type { SessionEvent } from '@tidemark/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { scanLog } from '../src/index.js';
import { batchLines, headerLine } from './logs.js';

const TIME = '2026-01-01T00:00:00.000Z';

const jsonData = fc
  .jsonValue({ maxDepth: 3 })
  .map((v) => JSON.parse(JSON.stringify(v)) as SessionEvent['data']);

/** Batch sizes and payloads; seqs are assigned in order. */
const batchesArb = fc.array(
  fc.array(fc.record({ type: fc.constantFrom('note', 'user/message', 'turn/end'), data: jsonData }), {
    minLength: 1,
    maxLength: 4,
  }),
  { minLength: 0, maxLength: 6 },
);

function build(batches: { type: string; data: SessionEvent['data'] }[][]) {
  let seq = 0;
  const header = Buffer.from(headerLine(), 'utf8');
  const parts: Buffer[] = [header];
  const ends: number[] = [];
  const events: SessionEvent[][] = [];
  let offset = header.length;
  for (const batch of batches) {
    const evs = batch.map((e) => ({ seq: seq++, type: e.type, time: TIME, data: e.data }));
    const bytes = Buffer.from(batchLines(evs), 'utf8');
    parts.push(bytes);
    offset += bytes.length;
    ends.push(offset);
    events.push(evs);
  }
  return { log: Buffer.concat(parts), headerLength: header.length, ends, events };
}

describe('scanLog properties', () => {
  it('for any valid log and any cut point: exactly the complete batches before the cut, the rest torn', () => {
    fc.assert(
      fc.property(batchesArb, fc.double({ min: 0, max: 1, noNaN: true }), (batches, where) => {
        const { log, headerLength, ends, events } = build(batches);
        const cut = Math.floor(where * log.length);
        const report = scanLog(log.subarray(0, cut));
        if (cut < headerLength) {
          expect(report.problem?.kind).toBe('corrupt');
          expect(report.batches).toEqual([]);
          return;
        }
        expect(report.problem).toBeUndefined();
        const complete = ends.filter((end) => end <= cut).length;
        expect(report.batches.map((b) => b.events)).toEqual(events.slice(0, complete));
        const committed = complete === 0 ? headerLength : ends[complete - 1]!;
        expect(report.committedBytes).toBe(committed);
        if (cut > committed)
          expect(report.torn).toMatchObject({ offset: committed, length: cut - committed });
        else expect(report.torn).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it('zeros or garbage anywhere in the last write are a torn tail, never corruption (ALICE)', () => {
    fc.assert(
      fc.property(
        batchesArb.filter((b) => b.length > 0),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.boolean(),
        (batches, a, b, zeros) => {
          const { log, ends, events, headerLength } = build(batches);
          const lastStart = ends.length > 1 ? ends[ends.length - 2]! : headerLength;
          const span = log.length - lastStart;
          const from = lastStart + Math.floor(Math.min(a, b) * span);
          const to = lastStart + Math.max(from - lastStart + 1, Math.floor(Math.max(a, b) * span));
          const damaged = Buffer.from(log);
          for (
            let i = from;
            i < Math.min(to, log.length);
            i++ // XOR, not random bytes: garbage must differ from what was there.
          )
            damaged[i] = zeros ? 0 : log[i]! ^ 0x5a;
          const report = scanLog(damaged);
          expect(report.problem).toBeUndefined();
          expect(report.batches.map((x) => x.events)).toEqual(events.slice(0, -1));
          expect(report.torn?.offset).toBe(lastStart);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('arbitrary bytes never throw, never hang, never change a prototype', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), fc.boolean(), (bytes, withHeader) => {
        const input = withHeader ? Buffer.concat([Buffer.from(headerLine()), bytes]) : Buffer.from(bytes);
        const report = scanLog(input);
        expect(report.committedBytes).toBeLessThanOrEqual(input.length);
        if (report.problem === undefined && report.torn !== undefined) {
          expect(report.torn.offset + report.torn.length).toBe(input.length);
        }
        expect(Object.getPrototypeOf({})).toBe(Object.prototype);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });
});
