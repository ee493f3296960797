import { crc32 } from 'node:zlib';
import type { SessionSummary } from '@tidemark/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeAppendHead,
  decodeEventRows,
  eventChecksum,
  rowToMeta,
  rowToSummary,
  type SessionRow,
  summaryColumns,
} from '../src/rows.js';

const FILE = '/x/store.db';

function row(overrides: Partial<SessionRow> = {}): SessionRow {
  return {
    id: 's1',
    format_version: 1,
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:01.000Z',
    cwd: null,
    parent_id: null,
    parent_seq: null,
    event_count: 3,
    committed_seq: 1,
    interrupted: 1,
    title: null,
    first_prompt: null,
    tags: null,
    attrs: null,
    ...overrides,
  };
}

function corruptCode(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
}

describe('rowToSummary / summaryColumns', () => {
  it('round trips every optional field', () => {
    const summary: SessionSummary = {
      id: 's1',
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:01.000Z',
      cwd: '/p',
      parent: { id: 'p0', seq: 4 },
      eventCount: 3,
      committedSeq: 2,
      interrupted: false,
      title: 'T',
      firstPrompt: 'hello',
      tags: ['a', 'b'],
      attrs: { k: [1, { __proto__: 'x' }] } as SessionSummary['attrs'],
    };
    const r = row({ ...summaryColumns(summary), cwd: '/p', parent_id: 'p0', parent_seq: 4 });
    expect(rowToSummary(r, FILE)).toEqual(summary);
    expect(rowToMeta(r, FILE)).toEqual({
      id: 's1',
      createdAt: summary.createdAt,
      cwd: '/p',
      parent: { id: 'p0', seq: 4 },
      formatVersion: 1,
    });
  });

  it('leaves absent fields absent', () => {
    const summary = rowToSummary(row({ event_count: 0, committed_seq: -1, interrupted: 0 }), FILE);
    expect(Object.keys(summary).sort()).toEqual([
      'committedSeq',
      'createdAt',
      'eventCount',
      'id',
      'interrupted',
      'updatedAt',
    ]);
  });

  it.each<[string, Partial<SessionRow>]>([
    ['tags not JSON', { tags: '[oops' }],
    ['tags not strings', { tags: '[1]' }],
    ['attrs an array', { attrs: '[]' }],
    ['attrs null', { attrs: 'null' }],
    ['negative count', { event_count: -1 }],
    ['committed past the log', { committed_seq: 3 }],
    ['committed below -1', { committed_seq: -2 }],
    ['bad flag', { interrupted: 2 }],
    ['half a parent', { parent_id: 'p' }],
    ['non-text time', { updated_at: 5 as unknown as string }],
  ])('reports %s as CORRUPT with the row', (_, overrides) => {
    let error: unknown;
    try {
      rowToSummary(row(overrides), FILE);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({
      code: 'CORRUPT',
      location: { file: FILE, table: 'sessions', row: 'id=s1' },
    });
  });
});

describe('decodeEventRows', () => {
  const row = (seq: unknown, type: string, time: string, data: string) => [
    seq,
    type,
    time,
    data,
    eventChecksum(type, time, data),
  ];
  const good = [row(5, 'a', 't', '{"x":1}'), row(6, 'b', 't', 'null'), row(7, 'c', 't', '"__proto__"')];

  it('decodes contiguous rows', () => {
    expect(decodeEventRows('s', good, 5, FILE)).toEqual([
      { seq: 5, type: 'a', time: 't', data: { x: 1 } },
      { seq: 6, type: 'b', time: 't', data: null },
      { seq: 7, type: 'c', time: 't', data: '__proto__' },
    ]);
    expect(decodeEventRows('s', [], 0, FILE)).toEqual([]);
  });

  it('keeps __proto__ as an ordinary key', () => {
    const [event] = decodeEventRows('s', [row(0, 'a', 't', '{"__proto__":{"polluted":true}}')], 0, FILE);
    expect(Object.getPrototypeOf(event!.data)).toBe(Object.prototype);
    expect(Object.hasOwn(event!.data as object, '__proto__')).toBe(true);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it.each<[string, unknown[][], number]>([
    ['a gap', [good[0]!, good[2]!], 6],
    ['a wrong start', good, 4],
    ['a duplicate', [good[0]!, good[0]!], 6],
    ['a non-integer seq', [row('5', 'a', 't', '1')], 5],
    ['a non-text type', [[5, 1, 't', '1', 0]], 5],
    ['a blob data', [[5, 'a', 't', Buffer.from('1'), 0]], 5],
    ['a missing checksum', [[5, 'a', 't', '1', null]], 5],
    ['a changed byte in data', [[5, 'a', 't', '{"x":2}', eventChecksum('a', 't', '{"x":1}')]], 5],
    ['a changed type', [[5, 'b', 't', '1', eventChecksum('a', 't', '1')]], 5],
    ['a changed time', [[5, 'a', 'u', '1', eventChecksum('a', 't', '1')]], 5],
    ['unparsable data', [row(5, 'a', 't', '{"x":')], 5],
  ])('reports %s as CORRUPT at the expected seq', (_, rows, seq) => {
    const first = rows === good ? 4 : 5;
    let error: unknown;
    try {
      decodeEventRows('s', rows, first, FILE);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({
      code: 'CORRUPT',
      location: { file: FILE, table: 'events', seq: rows === good ? 4 : seq },
    });
  });

  it('never throws an untyped error on arbitrary rows', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(fc.anything(), fc.anything(), fc.anything(), fc.oneof(fc.string(), fc.anything())),
          { maxLength: 5 },
        ),
        (rows) => {
          const code = corruptCode(() => decodeEventRows('s', rows, 0, FILE));
          expect(code === undefined || code === 'CORRUPT').toBe(true);
        },
      ),
    );
  });
});

describe('eventChecksum', () => {
  it('is the CRC-32 of type NUL time NUL data, for small and large data alike', () => {
    for (const data of ['1', 'é'.repeat(3000), 'x'.repeat(5000), '"😀"'.repeat(2000)]) {
      expect(eventChecksum('t', 'u', data)).toBe(crc32(Buffer.from(`t\u0000u\u0000${data}`, 'utf8')));
    }
    expect(eventChecksum('a', 'b', 'c')).not.toBe(eventChecksum('a', 'bc', ''));
  });
});

describe('decodeAppendHead', () => {
  it('decodes the fields an append changes and the next seq', () => {
    expect(decodeAppendHead('s', ['2026-01-01T00:00:00.000Z', 3, 1, 1, 'hi', 2], FILE)).toEqual({
      nextSeq: 3,
      summary: {
        id: 's',
        createdAt: '',
        updatedAt: '2026-01-01T00:00:00.000Z',
        eventCount: 3,
        committedSeq: 1,
        interrupted: true,
        firstPrompt: 'hi',
      },
    });
    expect(decodeAppendHead('s', ['t', 0, -1, 0, null, null], FILE)).toEqual({
      nextSeq: 0,
      summary: {
        id: 's',
        createdAt: '',
        updatedAt: 't',
        eventCount: 0,
        committedSeq: -1,
        interrupted: false,
      },
    });
  });

  it.each<[string, unknown[]]>([
    ['rows lost at the end', ['t', 3, 1, 1, null, 1]],
    ['rows behind the count', ['t', 3, 1, 1, null, 5]],
    ['no rows under a count', ['t', 3, 1, 1, null, null]],
    ['a count of -1', ['t', -1, -1, 0, null, null]],
    ['committed past the log', ['t', 2, 2, 0, null, 1]],
    ['a bad flag', ['t', 2, 1, 7, null, 1]],
    ['a non-text prompt', ['t', 2, 1, 0, 5, 1]],
    ['a non-text time', [5, 2, 1, 0, null, 1]],
    ['a non-integer max', ['t', 2, 1, 0, null, '1']],
  ])('reports %s as CORRUPT on the sessions row', (_, row) => {
    let error: unknown;
    try {
      decodeAppendHead('s', row, FILE);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({
      code: 'CORRUPT',
      location: { file: FILE, table: 'sessions', row: 'id=s' },
    });
  });
});
