// The edges of the value rules: what JSON, event fields, timestamps, cursors and derived prompts
// are accepted, and how a refusal names the offending value and its path.
import { describe, expect, it } from 'vitest';
import {
  assertJsonValue,
  boundaryPredicate,
  compareForList,
  decodeCursor,
  emptySummary,
  encodeCursor,
  isIsoTime,
  type JsonValue,
  jsonEqual,
  listAll,
  pageOf,
  pathWithKey,
  prepareBatch,
  prepareEvent,
  promptOf,
  type SessionStore,
  sliceWellFormed,
  summaryAfterAppend,
} from '../src/index.js';

const T = '2026-11-29T10:00:00.000Z';

function invalidMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect((error as { code?: string }).code).toBe('INVALID');
    return (error as Error).message;
  }
  throw new Error('expected INVALID');
}

describe('paths in messages', () => {
  it('spells identifiers with dots, other keys quoted, indices in brackets', () => {
    expect(pathWithKey('', 'a')).toBe('a');
    expect(pathWithKey('x', 'a')).toBe('x.a');
    expect(pathWithKey('x', 'odd key')).toBe('x["odd key"]');
    expect(pathWithKey('', 'odd key')).toBe('["odd key"]');
    expect(pathWithKey('x', 3)).toBe('x[3]');
    expect(invalidMessage(() => assertJsonValue({ 'a b': [1, { c: undefined }] }))).toBe(
      '["a b"][1].c: undefined',
    );
  });
});

/** `[1, <hole>, 3]`. */
function sparse(): number[] {
  const holes: number[] = [];
  holes[0] = 1;
  holes[2] = 3;
  return holes;
}

describe('what is not JSON', () => {
  class Point {}
  const Anonymous = (() => class {})();
  it.each<[string, unknown, string]>([
    ['a BigInt', 1n, 'value: BigInt'],
    ['undefined', undefined, 'value: undefined'],
    ['a function', () => 1, 'value: function'],
    ['a symbol', Symbol('s'), 'value: symbol'],
    ['Infinity', Number.POSITIVE_INFINITY, 'value: Infinity'],
    ['NaN', Number.NaN, 'value: NaN'],
    ['negative zero', -0, 'value: -0 (JSON turns negative zero into 0)'],
    ['an array subclass', new (class List extends Array {})(), 'value: array subclass'],
    ['a class instance', new Point(), 'value: Point'],
    ['an instance of an anonymous class', new Anonymous(), 'value: non-plain object'],
    ['a Date', new Date(0), 'value: Date'],
    ['a sparse array', sparse(), '[1]: hole in sparse array'],
    ['an array with an extra property', Object.assign([1], { x: 1 }), 'value: array with extra properties'],
  ])('names %s', (_, value, message) => {
    expect(invalidMessage(() => assertJsonValue(value))).toBe(message);
  });

  it('names an object whose constructor name is not a string', () => {
    const odd = Object.create({ constructor: { name: 5 } });
    expect(invalidMessage(() => assertJsonValue(odd))).toBe('value: non-plain object');
    const none = Object.create({ constructor: undefined });
    expect(invalidMessage(() => assertJsonValue(none))).toBe('value: non-plain object');
  });

  it('takes a null-prototype object as plain', () => {
    const bare = Object.assign(Object.create(null), { a: 1 });
    expect(() => assertJsonValue(bare)).not.toThrow();
  });
});

describe('structural equality', () => {
  it.each<[JsonValue, JsonValue]>([
    [1, { a: 1 }],
    [{ a: 1 }, 1],
    [null, {}],
    [{}, null],
    [[], {}],
    [{}, []],
    [[1], [1, 2]],
    [{ a: 1 }, { b: 1 }],
    [{ a: 1 }, { a: 1, b: 2 }],
    [[{ a: 1 }], [{ a: 2 }]],
    [{ a: [1] }, { a: [2] }],
  ])('tells %j from %j', (a, b) => {
    expect(jsonEqual(a, b)).toBe(false);
  });

  it('finds equal nested values equal', () => {
    expect(jsonEqual([{ a: [1, { b: null }] }], [{ a: [1, { b: null }] }])).toBe(true);
  });
});

describe('cutting text without splitting a pair', () => {
  it('returns text at or under the length whole, even ending in half a pair', () => {
    expect(sliceWellFormed('ab\uD83D', 3)).toBe('ab\uD83D');
    expect(sliceWellFormed('abc', 5)).toBe('abc');
  });

  it('steps back only over a high surrogate at the cut', () => {
    expect(sliceWellFormed('ab\uD800\uDC00', 3)).toBe('ab');
    expect(sliceWellFormed('ab\uDBFF\uDC00', 3)).toBe('ab');
    expect(sliceWellFormed('ab\uD7FFx', 3)).toBe('ab\uD7FF');
    expect(sliceWellFormed('ab\uDC00x', 3)).toBe('ab\uDC00');
  });
});

describe('event fields', () => {
  it('takes timestamps with or without seconds and fractions, but anchored and zoned', () => {
    expect(isIsoTime('2026-11-29T10:00Z')).toBe(true);
    expect(isIsoTime('2026-11-29T10:00:00Z')).toBe(true);
    expect(isIsoTime('2026-11-29T10:00:00.123456789+05:30')).toBe(true);
    expect(isIsoTime(`x${T}`)).toBe(false);
    expect(isIsoTime(`${T}x`)).toBe(false);
    expect(isIsoTime({ toString: () => T })).toBe(false);
  });

  it('refuses an event that is not an object, naming where it is', () => {
    for (const value of [[], 'x', 5])
      expect(invalidMessage(() => prepareEvent(value, 'events[2]'))).toBe(
        'events[2]: an event must be an object with seq, type, time and data',
      );
  });

  it('takes a type of 1 to 256 characters, and only a string', () => {
    expect(prepareEvent({ seq: 0, type: 'x'.repeat(256), time: T, data: 1 }, 'e').event.type).toHaveLength(
      256,
    );
    for (const type of ['x'.repeat(257), 5, ''])
      expect(invalidMessage(() => prepareEvent({ seq: 0, type, time: T, data: 1 }, 'e'))).toBe(
        'e.type: must be a string of 1 to 256 characters',
      );
    expect(invalidMessage(() => prepareEvent({ seq: 0, type: 'a\uD800', time: T, data: 1 }, 'e'))).toBe(
      'e.type: must be well-formed Unicode text, but has a lone UTF-16 surrogate at index 1',
    );
  });

  it('shows the refused seq or time in the message, long strings cut', () => {
    expect(invalidMessage(() => prepareEvent({ seq: 5n, type: 't', time: T, data: 1 }, 'e'))).toBe(
      'e.seq: must be a non-negative integer, got 5n (BigInt)',
    );
    expect(invalidMessage(() => prepareEvent({ seq: '7', type: 't', time: T, data: 1 }, 'e'))).toBe(
      'e.seq: must be a non-negative integer, got "7"',
    );
    expect(
      invalidMessage(() => prepareEvent({ seq: 0, type: 't', time: 'y'.repeat(41), data: 1 }, 'e')),
    ).toBe(`e.time: must be an ISO-8601 timestamp with a zone, got "${'y'.repeat(40)}…"`);
    expect(
      invalidMessage(() => prepareEvent({ seq: 0, type: 't', time: 'y'.repeat(40), data: 1 }, 'e')),
    ).toBe(`e.time: must be an ISO-8601 timestamp with a zone, got "${'y'.repeat(40)}"`);
    expect(invalidMessage(() => prepareEvent({ seq: 0, type: 't', time: 7, data: 1 }, 'e'))).toBe(
      'e.time: must be an ISO-8601 timestamp with a zone, got 7',
    );
  });

  it('applies the depth limit to data and takes an event of exactly the byte limit', () => {
    expect(
      invalidMessage(() => prepareEvent({ seq: 0, type: 't', time: T, data: [[1]] }, 'e', { maxDepth: 1 })),
    ).toBe('e.data[0]: nested deeper than 1 levels');
    const exact = prepareEvent({ seq: 0, type: 't', time: T, data: 1 }, 'e');
    expect(prepareEvent(exact.event, 'e', { maxEventBytes: exact.bytes }).bytes).toBe(exact.bytes);
    expect(invalidMessage(() => prepareEvent(exact.event, 'e', { maxEventBytes: exact.bytes - 1 }))).toBe(
      `e: serialized event is ${exact.bytes} bytes, over the limit of ${exact.bytes - 1}`,
    );
  });

  it('names a batch that is not an array, without a session id unless given', () => {
    expect(invalidMessage(() => prepareBatch({ length: 1 }))).toBe('events: must be an array of events');
    try {
      prepareBatch([]);
    } catch (error) {
      expect(error).not.toHaveProperty('sessionId', expect.anything());
    }
  });
});

describe('list order and cursors', () => {
  it('orders newest first, then by id, and finds a summary equal to itself', () => {
    const a = { updatedAt: 'B', id: 'x' };
    expect(compareForList(a, { updatedAt: 'A', id: 'x' })).toBe(-1);
    expect(compareForList({ updatedAt: 'A', id: 'x' }, a)).toBe(1);
    expect(compareForList(a, { updatedAt: 'B', id: 'y' })).toBe(-1);
    expect(compareForList({ updatedAt: 'B', id: 'y' }, a)).toBe(1);
    expect(compareForList(a, { ...a })).toBe(0);
  });

  it('refuses anything but a pair of strings as a cursor, quoting at most 40 characters', () => {
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
    for (const value of [['a'], ['a', 'b', 'c'], [1, 'a'], ['a', 1], { 0: 'a', 1: 'b', length: 2 }]) {
      const cursor = encode(value);
      expect(invalidMessage(() => decodeCursor(cursor))).toBe(
        `list: cursor ${JSON.stringify(cursor.slice(0, 40))} is not a cursor from this store`,
      );
    }
    expect(decodeCursor(encodeCursor({ updatedAt: 'é', id: 'i' }))).toEqual({ updatedAt: 'é', id: 'i' });
    expect(decodeCursor(encode(['u', 'i']))).toEqual({ updatedAt: 'u', id: 'i' });
  });

  it('gives an empty problem list when none are given', () => {
    expect(pageOf([], { limit: 5 }).problems).toEqual([]);
    const problems = [
      { id: 'b', error: 'x' },
      { id: 'a', error: 'y' },
      { id: 'b', error: 'z' },
    ] as unknown as Parameters<typeof pageOf>[2];
    expect(pageOf([], { limit: 5 }, problems).problems.map((p) => p.id)).toEqual(['a', 'b', 'b']);
  });

  it('asks list for no cwd or cursor it was not given', async () => {
    const asked: unknown[] = [];
    const store = {
      list: async (query: unknown) => {
        asked.push(query);
        return { sessions: [], problems: [] };
      },
    } as unknown as SessionStore;
    for await (const _ of listAll(store, { pageSize: 3 })) {
      // nothing to list
    }
    expect(asked).toStrictEqual([{ limit: 3 }]);
  });
});

describe('derived prompts and boundaries', () => {
  const ev = (seq: number, type: string, data: JsonValue) => ({ seq, type, time: T, data });

  it('takes the text of a user message, and nothing from blanks or other shapes', () => {
    expect(promptOf(ev(0, 'user/message', '  hi  there '))).toBe('hi there');
    expect(promptOf(ev(0, 'user/message', { content: 'c' }))).toBe('c');
    expect(promptOf(ev(0, 'user/message', ['hi']))).toBeUndefined();
    expect(promptOf(ev(0, 'user/message', ' \n '))).toBeUndefined();
    expect(promptOf(ev(0, 'user/message', 5))).toBeUndefined();
    expect(promptOf(ev(0, 'assistant/message', 'hi'))).toBeUndefined();
  });

  it('keeps a prompt of exactly 200 characters whole and cuts a longer one to 200', () => {
    expect(promptOf(ev(0, 'user/message', 'x'.repeat(200)))).toBe('x'.repeat(200));
    expect(promptOf(ev(0, 'user/message', 'x'.repeat(201)))).toBe(`${'x'.repeat(199)}…`);
  });

  it('never replaces a first prompt already known', () => {
    const summary = { ...emptySummary({ id: 's', createdAt: T }), firstPrompt: 'first' };
    const next = summaryAfterAppend(summary, [ev(0, 'user/message', 'second')], boundaryPredicate(), T);
    expect(next.firstPrompt).toBe('first');
  });

  it('closes units of work at turn/end and session/end by default', () => {
    const isBoundary = boundaryPredicate();
    expect(isBoundary({ type: 'turn/end' })).toBe(true);
    expect(isBoundary({ type: 'session/end' })).toBe(true);
    expect(isBoundary({ type: '' })).toBe(false);
  });
});
