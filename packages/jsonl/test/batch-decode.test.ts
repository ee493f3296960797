// A load parses the events of a batch together (batch-decode.ts) once the framing of each of its
// lines, read from the bytes, says the batch is on course to commit. Its answer must be the
// per-line answer (readEventLine) or nothing, so these tests look at it directly: it is taken for
// every batch the writer writes, answers what the lines decoded one by one answer, and steps
// aside for everything else. Then the scanner: one push of a damaged log (batches decoded
// together) must say exactly what the same bytes pushed line by line say, where every batch of
// more than one line is decided line by line.
import { prepareBatch, type SessionEvent } from '@tidemark/core';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { decodeFramedLines, type FramedLine, frameLine } from '../src/batch-decode.js';
import { readEventLine } from '../src/format.js';
import { LogScanner, type ScanOptions, scanLog } from '../src/scan.js';
import { batchLines, headerLine, sealLine } from './logs.js';

const T = '2026-01-01T00:00:00.000Z';

/** A line-length limit that the generated lines stay under, and 'overlong' ones go past. */
const MAX_LINE = 2000;

/** The lines of one batch as the writer frames them, without their newlines. */
function writerLines(datas: readonly unknown[], firstSeq: number): Buffer[] {
  const events = datas.map((data, i) => ({ seq: firstSeq + i, type: 'note', time: T, data }));
  return batchLines(events as SessionEvent[], T)
    .split('\n')
    .filter(Boolean)
    .map((line) => Buffer.from(line, 'utf8'));
}

/** Each line framed at its own offset (one line after another, as in a log); undefined if one is not. */
function framedAll(lines: readonly Buffer[]): FramedLine[] | undefined {
  const framed: FramedLine[] = [];
  let offset = 0;
  for (const line of lines) {
    const one = frameLine(line, 0, line.length, offset);
    if (one === undefined) return undefined;
    framed.push(one);
    offset += line.length + 1;
  }
  return framed;
}

const oneByOne = (lines: readonly Buffer[]) => lines.map((line) => readEventLine(line, 0, line.length));

/** What decodeFramedLines must give for `lines`: the events each line's own decode gives. */
const eventsOneByOne = (lines: readonly Buffer[]) => oneByOne(lines).map((line) => line?.event);

/** The framing each line's own decode reads, as frameLine must read it. */
const framingOneByOne = (lines: readonly Buffer[]) =>
  oneByOne(lines).map((line) => ({ last: line?.end, first: line?.start, at: line?.at }));
const framingOf = (lines: readonly FramedLine[]) => lines.map(({ last, first, at }) => ({ last, first, at }));

const DATAS = [
  { text: 'plain' },
  { text: 'quotes " and \\ backslashes', nested: { end: 9, at: 'x', start: 1 } },
  'a string with ,"end":5 and },{"seq":6, inside',
  ['é', '✓', '\u{1F600}'],
  null,
  12345678901234,
  { '': [[], {}, [{}]] },
];

describe('a batch decoded together', () => {
  it("is taken for every batch the writer frames and answers what each line's decode answers", () => {
    for (const [first, count] of [
      [0, 1],
      [7, 2],
      [41, DATAS.length],
      [999_999_999_999_990, 3],
    ] as const) {
      const lines = writerLines(DATAS.slice(0, count), first);
      const framed = framedAll(lines);
      expect(framed?.map((line) => line.seq)).toEqual(lines.map((_, i) => first + i));
      expect(oneByOne(lines).every((line) => line !== undefined)).toBe(true);
      expect(framingOf(framed!)).toEqual(framingOneByOne(lines));
      expect(decodeFramedLines(framed!)).toEqual(eventsOneByOne(lines));
    }
  });

  it('for any JSON data, equals the lines decoded one by one', () => {
    const data = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);
    fc.assert(
      fc.property(fc.array(data, { minLength: 1, maxLength: 6 }), fc.nat(1000), (datas, first) => {
        const lines = writerLines(datas, first);
        const framed = framedAll(lines)!;
        expect(framingOf(framed)).toEqual(framingOneByOne(lines));
        expect(decodeFramedLines(framed)).toEqual(eventsOneByOne(lines));
      }),
      { numRuns: 300 },
    );
  });

  it('reads lines at their own offsets inside a larger buffer', () => {
    const lines = writerLines(DATAS.slice(0, 3), 5);
    const log = Buffer.from(`${headerLine()}${lines.map((line) => `${line}\n`).join('')}`, 'utf8');
    const framed: FramedLine[] = [];
    let start = log.indexOf(0x0a) + 1;
    while (start < log.length) {
      const end = log.indexOf(0x0a, start);
      framed.push(frameLine(log, start, end, start)!);
      start = end + 1;
    }
    expect(framed.map((line) => line.offset)).toEqual([
      log.indexOf('{"seq":5'),
      log.indexOf('{"seq":6'),
      log.indexOf('{"seq":7'),
    ]);
    expect(decodeFramedLines(framed)).toEqual(eventsOneByOne(lines));
  });
});

describe('a batch decoded together steps aside', () => {
  const event = (seq: number, data = '{"a":1}') => `{"seq":${seq},"type":"note","time":"${T}","data":${data}`;
  const framings: [string, string][] = [
    ['a seq with a leading zero', `{"seq":03,"type":"note","time":"${T}","data":1,"end":3,"at":"${T}"`],
    ['a seq that is not first', `{"type":"note","seq":3,"time":"${T}","data":1,"end":3,"at":"${T}"`],
    ['a space after the seq', `{"seq":3 ,"type":"note","time":"${T}","data":1,"end":3,"at":"${T}"`],
    [
      'a seq of 16 digits',
      `{"seq":1234567890123456,"type":"note","time":"${T}","data":1,"end":3,"at":"${T}"`,
    ],
    ['a space before `end`', `${event(3)}, "end":3,"at":"${T}"`],
  ];
  for (const [what, body] of framings) {
    it(`for a line with ${what}: not framed, left to the line's own decode`, () => {
      const line = sealLine(body);
      expect(frameLine(line, 0, line.length, 0)).toBeUndefined();
    });
  }

  it('for a line whose checksum does not match', () => {
    const [line] = writerLines([1], 0);
    const bad = Buffer.from(line!);
    bad[10] = bad[10]! ^ 1;
    expect(frameLine(bad, 0, bad.length, 0)).toBeUndefined();
  });

  const decodes: [string, string[]][] = [
    [
      'an event that names its seq twice (the second, valid, counts)',
      [`${event(3)},"seq":2,"end":4`, `${event(4)},"start":3,"end":4,"at":"${T}"`],
    ],
    [
      'an event with a framing key of its own',
      [`${event(3, '1,"end":4')},"end":4`, `${event(4)},"start":3,"end":4,"at":"${T}"`],
    ],
    ['a closing line without `at`', [`${event(3)},"end":4`, `${event(4)},"start":3,"end":4`]],
    ['an `at` that is no time', [`${event(3)},"end":4`, `${event(4)},"start":3,"end":4,"at":"never"`]],
    [
      'an event without data',
      [`{"seq":3,"type":"note","time":"${T}","end":4`, `${event(4)},"start":3,"end":4,"at":"${T}"`],
    ],
    [
      'an empty type',
      [`{"seq":3,"type":"","time":"${T}","data":1,"end":4`, `${event(4)},"start":3,"end":4,"at":"${T}"`],
    ],
    ['a `start` past the seq', [`${event(3)},"end":4`, `${event(4)},"start":4,"end":4,"at":"${T}"`]],
    [
      'a line holding two events',
      [`${event(3)}},${event(9)},"end":4`, `${event(4)},"start":3,"end":4,"at":"${T}"`],
    ],
    [
      'a line holding two events, the second the one the next line holds',
      [`${event(3)}},${event(4)},"end":4`, `${event(4)},"start":3,"end":4,"at":"${T}"`],
    ],
    [
      'a line whose event is cut short',
      [`${event(3, '[1')},"end":4`, `${event(4)},"start":3,"end":4,"at":"${T}"`],
    ],
    [
      'a line whose event is no JSON',
      [`${event(3, 'nope')},"end":4`, `${event(4)},"start":3,"end":4,"at":"${T}"`],
    ],
  ];
  for (const [what, bodies] of decodes) {
    it(`for ${what}: no answer, so the lines are decoded one by one`, () => {
      const lines = bodies.map(sealLine);
      const framed = framedAll(lines);
      expect(framed).toBeDefined();
      expect(decodeFramedLines(framed!)).toBeUndefined();
    });
  }

  it('for a batch larger than the shared scratch space, still one answer', () => {
    const big = 'x'.repeat(300_000);
    const lines = writerLines([big, big, big, big], 0);
    expect(decodeFramedLines(framedAll(lines)!)).toEqual(eventsOneByOne(lines));
    // and the shared space is still right for a small batch afterwards
    const small = writerLines([1, 2], 0);
    expect(decodeFramedLines(framedAll(small)!)).toEqual(eventsOneByOne(small));
  });
});

/** The scan of `log` pushed in pieces that end at `cuts` (sorted offsets). */
function scanInPieces(log: Buffer, cuts: readonly number[], options: ScanOptions = {}) {
  const scanner = new LogScanner(options);
  const batches = [];
  let from = 0;
  for (const cut of [...cuts, log.length]) {
    if (cut <= from) continue;
    batches.push(...scanner.push(log.subarray(from, cut)));
    from = cut;
  }
  return { ...scanner.finish(), batches };
}

/** The scan of `log` pushed one line (newline included) per push: framed lines settle per line. */
function scanLineByLine(log: Buffer, options: ScanOptions = {}) {
  const lineEnds: number[] = [];
  for (let nl = log.indexOf(0x0a); nl !== -1; nl = log.indexOf(0x0a, nl + 1)) lineEnds.push(nl + 1);
  return scanInPieces(log, lineEnds, options);
}

describe('the scanner with batches decoded together', () => {
  const data = fc
    .jsonValue({ maxDepth: 2 })
    .map((v) => JSON.parse(JSON.stringify(v)) as SessionEvent['data']);
  const batchSizes = fc.array(fc.array(data, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 5 });
  /** Damage to a log's lines: each keeps the log's lines, or swaps in one that some rule refuses. */
  const damage = fc.array(
    fc.record({
      kind: fc.constantFrom('flip', 'drop', 'repeat', 'swap', 'reframe', 'twice-seq', 'cut', 'overlong'),
      at: fc.nat(),
      other: fc.nat(),
    }),
    { maxLength: 3 },
  );

  function damaged(batches: SessionEvent['data'][][], hits: { kind: string; at: number; other: number }[]) {
    let seq = 0;
    const lines = [headerLine().slice(0, -1)];
    for (const datas of batches) {
      const events = datas.map((d) => ({ seq: seq++, type: 'note', time: T, data: d }));
      lines.push(...batchLines(events, T).split('\n').filter(Boolean));
    }
    for (const { kind, at, other } of hits) {
      const i = 1 + (at % (lines.length - 1));
      const j = 1 + (other % (lines.length - 1));
      const line = lines[i]!;
      if (kind === 'flip') lines[i] = line.slice(0, 5) + (line[5] === '1' ? '2' : '1') + line.slice(6);
      else if (kind === 'drop') lines.splice(i, 1);
      else if (kind === 'repeat') lines.splice(i, 0, line);
      else if (kind === 'swap') [lines[i], lines[j]] = [lines[j]!, line];
      else if (kind === 'cut') lines[i] = line.slice(0, other % line.length);
      else if (kind === 'overlong') lines[i] = line.padEnd(MAX_LINE + 1 + (other % 3), ' ');
      else {
        // Valid lines framed otherwise: a space before `end` (decoded whole), or a second seq.
        const body = line.slice(0, -18);
        const framed =
          kind === 'reframe'
            ? body.replace(',"end":', ', "end":')
            : body.replace('{"seq":', '{"seq":0,"seq":');
        lines[i] = sealLine(framed).toString('utf8');
      }
      if (lines.length < 2) break;
    }
    return Buffer.from(lines.map((line) => `${line}\n`).join(''), 'utf8');
  }

  it('says exactly what the scan line by line says, for any damage', () => {
    fc.assert(
      fc.property(batchSizes, damage, fc.boolean(), (batches, hits, unterminated) => {
        const full = damaged(batches, hits);
        const log = unterminated ? full.subarray(0, full.length - 1) : full;
        expect(scanLog(log)).toEqual(scanLineByLine(log));
        // A line longer than the limit is garbage, after the framed lines before it are decided.
        const limited = { maxLineBytes: MAX_LINE };
        expect(scanLog(log, limited)).toEqual(scanLineByLine(log, limited));
      }),
      { numRuns: 500 },
    );
  });

  it('says the same however the bytes are cut into pushes', () => {
    fc.assert(
      fc.property(batchSizes, damage, fc.array(fc.nat(), { maxLength: 8 }), (batches, hits, picks) => {
        const log = damaged(batches, hits);
        const cuts = picks.map((pick) => pick % (log.length + 1)).sort((a, b) => a - b);
        const limited = { maxLineBytes: MAX_LINE };
        expect(scanInPieces(log, cuts)).toEqual(scanLog(log));
        expect(scanInPieces(log, cuts, limited)).toEqual(scanLog(log, limited));
      }),
      { numRuns: 500 },
    );
  });

  describe('ends where the line-by-line scan ends when a framed line has a problem', () => {
    // The first line opens with seq 0 but names seq 1 again: framed as the batch's first line, it
    // is a seq gap once decided on its own. The scan must stop just past it, whatever decided it.
    const events = [0, 1, 2].map((seq) => ({ seq, type: 'note', time: T, data: seq }));
    const [first, second, third] = batchLines(events as SessionEvent[], T).split('\n');
    const twice = sealLine(first!.slice(0, -18).replace('{"seq":0,', '{"seq":0,"seq":1,')).toString('utf8');
    const header = headerLine();
    const problemEnd = Buffer.byteLength(header + twice) + 1;
    const cases: [string, string][] = [
      ['its batch closing (the batch decode refuses it)', `${header}${twice}\n${second}\n${third}\n`],
      ['a line that does not continue its batch', `${header}${twice}\n${twice}\n`],
      ['the end of the push, with a line cut short after it', `${header}${twice}\n${second!.slice(0, 40)}`],
      ['the end of the push', `${header}${twice}\n`],
      ['a line over the length limit', `${header}${twice}\n${'x'.repeat(MAX_LINE + 5)}\n`],
    ];
    for (const [what, text] of cases) {
      it(`at ${what}`, () => {
        const log = Buffer.from(text, 'utf8');
        const report = scanLog(log, { maxLineBytes: MAX_LINE });
        expect(report.problem).toMatchObject({ kind: 'corrupt', offset: Buffer.byteLength(header), seq: 0 });
        expect(report.totalBytes).toBe(problemEnd);
        expect(report.batches).toEqual([]);
        expect(report).toEqual(scanLineByLine(log, { maxLineBytes: MAX_LINE }));
      });
    }
  });

  it('parses each batch the writer wrote in one JSON.parse, whatever its length', () => {
    const header = headerLine();
    let seq = 0;
    const batches = [1, 2, 7, 40].map((count) =>
      Array.from({ length: count }, () => ({ seq: seq++, type: 'note', time: T, data: { n: seq } })),
    );
    const log = Buffer.from(header + batches.map((b) => batchLines(b as SessionEvent[], T)).join(''), 'utf8');
    const parses = (bytes: Buffer) => {
      const spy = vi.spyOn(JSON, 'parse');
      try {
        const report = scanLog(bytes);
        return { calls: spy.mock.calls.length, report };
      } finally {
        spy.mockRestore();
      }
    };
    const { calls, report } = parses(log);
    expect(report.batches.map((b) => b.events.length)).toEqual([1, 2, 7, 40]);
    expect(calls - parses(Buffer.from(header, 'utf8')).calls).toBe(batches.length);
  });

  it('commits a batch with one line framed otherwise, its events as the writer wrote them', () => {
    const events = DATAS.slice(0, 3).map((data, i) => ({ seq: i, type: 'note', time: T, data }));
    const lines = batchLines(events as SessionEvent[], T)
      .split('\n')
      .filter(Boolean);
    lines[1] = sealLine(lines[1]!.slice(0, -18).replace(',"start":', ', "start":')).toString('utf8');
    const log = Buffer.from(`${headerLine()}${lines.map((line) => `${line}\n`).join('')}`, 'utf8');
    const report = scanLog(log);
    expect(report.problem).toBeUndefined();
    expect(report.torn).toBeUndefined();
    expect(report.batches.map((b) => b.events)).toEqual([
      prepareBatch(events as SessionEvent[]).map((p) => p.event),
    ]);
  });
});
