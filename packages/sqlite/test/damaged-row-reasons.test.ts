// A damaged row is reported as CORRUPT saying what is wrong with it and where, so that an operator
// reading the error (or `verify`) can find the row; each reason a row can be refused for is pinned.
import { dataJsonOf } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import {
  decodeAppendHead,
  decodeEventRows,
  eventChecksum,
  eventRowKey,
  rowToMeta,
  rowToSummary,
  type SessionRow,
  summaryColumns,
} from '../src/rows.js';

const FILE = '/x/store.db';

function sessionRow(overrides: Partial<Record<keyof SessionRow, unknown>> = {}): SessionRow {
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
    interrupted: 0,
    title: null,
    first_prompt: null,
    tags: null,
    attrs: null,
    ...overrides,
  } as SessionRow;
}

function thrown(fn: () => unknown): {
  code?: string;
  message: string;
  location?: unknown;
  sessionId?: string;
} {
  try {
    fn();
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error('did not throw');
}

describe('a damaged sessions row', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['an id that is not text', { id: 7 }, 'id is not text'],
    ['a created_at that is not text', { created_at: null }, 'bad timestamps'],
    ['an updated_at that is not text', { updated_at: 5 }, 'bad timestamps'],
    ['a fractional event_count', { event_count: 1.5 }, 'bad event_count'],
    ['a negative event_count', { event_count: -1 }, 'bad event_count'],
    ['a fractional committed_seq', { committed_seq: 0.5 }, 'committed_seq outside the log'],
    ['a committed_seq below -1', { committed_seq: -2 }, 'committed_seq outside the log'],
    ['a committed_seq at the count', { committed_seq: 3 }, 'committed_seq outside the log'],
    ['an interrupted flag of 2', { interrupted: 2 }, 'bad interrupted flag'],
    ['an interrupted flag of -1', { interrupted: -1 }, 'bad interrupted flag'],
    ['tags that are not a list', { tags: '"a"' }, 'tags is not a list of strings'],
    ['tags holding a number', { tags: '["a",1]' }, 'tags is not a list of strings'],
    ['attrs that are a list', { attrs: '[]' }, 'attrs is not an object'],
    ['attrs that are null', { attrs: 'null' }, 'attrs is not an object'],
    ['attrs that are a number', { attrs: '1' }, 'attrs is not an object'],
    ['a parent id without its seq', { parent_id: 'p' }, 'half a parent reference'],
    ['a parent seq without its id', { parent_seq: 2 }, 'half a parent reference'],
    ['a fractional parent seq', { parent_id: 'p', parent_seq: 1.5 }, 'half a parent reference'],
    ['a parent id that is not text', { parent_id: 3, parent_seq: 1 }, 'half a parent reference'],
  ])('names %s', (_, overrides, what) => {
    const id = typeof overrides.id === 'number' ? String(overrides.id) : 's1';
    const error = thrown(() => rowToSummary(sessionRow(overrides), FILE));
    expect(error).toMatchObject({
      code: 'CORRUPT',
      message: `session ${id}: ${what} in table sessions of ${FILE}`,
      location: { file: FILE, table: 'sessions', row: `id=${id}` },
      sessionId: id,
    });
  });

  it('names a column that is not JSON, keeping the parse error as the cause', () => {
    const error = thrown(() => rowToSummary(sessionRow({ attrs: '{oops' }), FILE)) as Error;
    expect(error).toMatchObject({
      code: 'CORRUPT',
      message: `session s1: column attrs is not JSON in table sessions of ${FILE}`,
      location: { file: FILE, table: 'sessions', row: 'id=s1' },
      sessionId: 's1',
    });
    expect(error.cause).toBeInstanceOf(SyntaxError);
    expect(thrown(() => rowToSummary(sessionRow({ tags: '[' }), FILE)).message).toContain('column tags');
  });

  it('reads a committed_seq of -1 in an empty log and one just below the count', () => {
    expect(rowToSummary(sessionRow({ event_count: 0, committed_seq: -1 }), FILE).committedSeq).toBe(-1);
    expect(rowToSummary(sessionRow({ committed_seq: 2 }), FILE).committedSeq).toBe(2);
    expect(rowToSummary(sessionRow({ interrupted: 1 }), FILE).interrupted).toBe(true);
    expect(rowToSummary(sessionRow({ interrupted: 0 }), FILE).interrupted).toBe(false);
    expect(rowToSummary(sessionRow({ tags: '[]', attrs: '{}' }), FILE)).toMatchObject({
      tags: [],
      attrs: {},
    });
  });

  it('reads a parent with seq 0 and the meta of a row', () => {
    const row = sessionRow({ parent_id: 'p', parent_seq: 0, cwd: '/w' });
    expect(rowToSummary(row, FILE).parent).toEqual({ id: 'p', seq: 0 });
    expect(rowToMeta(row, FILE)).toEqual({
      id: 's1',
      createdAt: '2026-01-01T00:00:00.000Z',
      formatVersion: 1,
      cwd: '/w',
      parent: { id: 'p', seq: 0 },
    });
    expect(rowToMeta(sessionRow(), FILE)).toStrictEqual({
      id: 's1',
      createdAt: '2026-01-01T00:00:00.000Z',
      formatVersion: 1,
    });
    expect(thrown(() => rowToMeta(sessionRow({ parent_seq: 1 }), FILE)).message).toContain(
      'half a parent reference',
    );
  });
});

describe('the data text of a prepared event', () => {
  const event = { seq: 1, type: 'x', time: 't', data: { a: 1 } };
  const head = '{"seq":1,"type":"x","time":"t","data":';

  it('cuts the data out of the serialization when it has the expected layout', () => {
    expect(dataJsonOf({ event, json: `${head}[7]}`, bytes: 0 })).toBe('[7]');
  });

  // A serialization laid out otherwise is never sliced: the data is serialized afresh.
  it('serializes afresh when the head or the closing brace is not where expected', () => {
    expect(
      dataJsonOf({ event, json: '{"other":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19]}', bytes: 0 }),
    ).toBe('{"a":1}');
    expect(dataJsonOf({ event, json: `${head}[7]`, bytes: 0 })).toBe('{"a":1}');
  });
});

describe('the summary columns written for a summary', () => {
  it('stores absent optional fields as NULL and the flag as 0 or 1', () => {
    const base = { id: 's', createdAt: 'c', updatedAt: 'u', eventCount: 2, committedSeq: 1 };
    expect(summaryColumns({ ...base, interrupted: false })).toEqual({
      updated_at: 'u',
      event_count: 2,
      committed_seq: 1,
      interrupted: 0,
      title: null,
      first_prompt: null,
      tags: null,
      attrs: null,
    });
    expect(
      summaryColumns({ ...base, interrupted: true, title: '', firstPrompt: '', tags: [], attrs: {} }),
    ).toEqual({
      updated_at: 'u',
      event_count: 2,
      committed_seq: 1,
      interrupted: 1,
      title: '',
      first_prompt: '',
      tags: '[]',
      attrs: '{}',
    });
  });
});

describe('a damaged append head', () => {
  it.each<[string, unknown[], string]>([
    ['an updated_at that is not text', [5, 2, 1, 0, null, 1], 'bad updated_at'],
    ['an event_count that is text', ['t', '2', 1, 0, null, 1], 'bad event_count'],
    ['a fractional event_count', ['t', 1.5, 0, 0, null, 0], 'bad event_count'],
    ['a negative event_count', ['t', -1, -1, 0, null, null], 'bad event_count'],
    ['a committed_seq that is text', ['t', 2, '1', 0, null, 1], 'committed_seq outside the log'],
    ['a fractional committed_seq', ['t', 2, 0.5, 0, null, 1], 'committed_seq outside the log'],
    ['a committed_seq below -1', ['t', 2, -2, 0, null, 1], 'committed_seq outside the log'],
    ['a committed_seq at the count', ['t', 2, 2, 0, null, 1], 'committed_seq outside the log'],
    ['an interrupted flag of 2', ['t', 2, 1, 2, null, 1], 'bad interrupted flag'],
    ['a first_prompt that is a number', ['t', 2, 1, 0, 5, 1], 'bad first_prompt'],
  ])('names %s', (_, row, what) => {
    expect(thrown(() => decodeAppendHead('s', row, FILE))).toMatchObject({
      code: 'CORRUPT',
      message: `session s: ${what} in table sessions of ${FILE}`,
      location: { file: FILE, table: 'sessions', row: 'id=s' },
      sessionId: 's',
    });
  });

  // The count and the stored rows disagree: rows were lost or added behind the summary's back.
  it('says where the log ends when it does not end at the count', () => {
    for (const [maxSeq, shown] of [
      [5, '5'],
      [null, 'null'],
      ['1', '1'],
    ] as const) {
      expect(thrown(() => decodeAppendHead('s', ['t', 3, 1, 0, null, maxSeq], FILE))).toMatchObject({
        code: 'CORRUPT',
        message: `session s: the summary counts 3 events but the log ends at seq ${shown} in ${FILE}`,
        location: { file: FILE, table: 'sessions', row: 'id=s' },
        sessionId: 's',
      });
    }
  });

  // better-sqlite3 in safe-integer mode hands back a bigint: that is damage to report, not a TypeError.
  it('reports a max seq that is not a number as CORRUPT', () => {
    expect(thrown(() => decodeAppendHead('s', ['t', 3, 1, 0, null, 2n], FILE))).toMatchObject({
      code: 'CORRUPT',
      message: `session s: the summary counts 3 events but the log ends at seq 2 in ${FILE}`,
    });
  });

  it('accepts the edges: an empty log, committed -1 and just below the count, flags 0 and 1', () => {
    expect(decodeAppendHead('s', ['t', 0, -1, 0, null, null], FILE).nextSeq).toBe(0);
    const head = decodeAppendHead('s', ['t', 1, 0, 1, '', 0], FILE);
    expect(head).toEqual({
      nextSeq: 1,
      summary: {
        id: 's',
        createdAt: '',
        updatedAt: 't',
        eventCount: 1,
        committedSeq: 0,
        interrupted: true,
        firstPrompt: '',
      },
    });
  });
});

describe('a damaged events row', () => {
  const row = (seq: unknown, type = 'a', time = 't', data = '1') => [
    seq,
    type,
    time,
    data,
    eventChecksum(type, time, data),
  ];

  it.each<[string, unknown[][], number, string]>([
    ['a gap', [row(0), row(2)], 1, 'seq 1 is missing from table events of /x/store.db (found seq 2 next)'],
    [
      'a seq as text',
      [row('0')],
      0,
      'seq 0 is missing from table events of /x/store.db (found a non-integer seq next)',
    ],
    [
      'a non-text type',
      [[0, 1, 't', '1', 0]],
      0,
      'event 0 has a non-text column in table events of /x/store.db',
    ],
    [
      'a non-text time',
      [[0, 'a', 1, '1', 0]],
      0,
      'event 0 has a non-text column in table events of /x/store.db',
    ],
    [
      'a blob data',
      [[0, 'a', 't', Buffer.from('1'), 0]],
      0,
      'event 0 has a non-text column in table events of /x/store.db',
    ],
    [
      'a checksum as text',
      [[0, 'a', 't', '1', String(eventChecksum('a', 't', '1'))]],
      0,
      'event 0 has a non-text column in table events of /x/store.db',
    ],
    [
      'a wrong checksum',
      [[0, 'a', 't', '2', eventChecksum('a', 't', '1')]],
      0,
      'event 0 does not match its checksum in table events of /x/store.db',
    ],
    [
      'unparsable data',
      [row(0, 'a', 't', '{')],
      0,
      'event 0 has unparsable data in table events of /x/store.db',
    ],
  ])('names %s and the row', (_, rows, seq, what) => {
    expect(thrown(() => decodeEventRows('s', rows, 0, FILE))).toMatchObject({
      code: 'CORRUPT',
      message: `session s: ${what}`,
      location: { file: FILE, table: 'events', row: eventRowKey('s', seq), seq },
      sessionId: 's',
    });
  });

  it('keys a row by session and seq', () => {
    expect(eventRowKey('abc', 12)).toBe('session_id=abc seq=12');
  });
});
