import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  advanceCommitState,
  applyPatch,
  assertSameEvents,
  assertValidId,
  boundaryPredicate,
  commitStateOf,
  compareForList,
  decodeCursor,
  emptySummary,
  encodeCursor,
  errnoOf,
  generateId,
  isAfterCursor,
  isENOENT,
  isTidemarkError,
  isValidId,
  type JsonValue,
  nextUpdatedAt,
  nowIso,
  planAppend,
  prepareBatch,
  promptOf,
  type SessionEvent,
  summaryAfterAppend,
  summaryAfterCut,
  TidemarkError,
  toIoError,
  validateCreate,
  validateListQuery,
  validatePatch,
} from '../src/index.js';

const time = '2026-11-29T10:00:00.000Z';
const ev = (seq: number, type = 'tool/call', data: JsonValue = { seq }): SessionEvent => ({
  seq,
  type,
  time,
  data,
});
const batch = (...seqs: number[]) => prepareBatch(seqs.map((s) => ev(s)));

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(isTidemarkError(error)).toBe(true);
    return (error as TidemarkError).code;
  }
  return 'OK';
}

describe('ids', () => {
  it.each(['a', 'A-b_c.d', '0'.repeat(128), '019371b2-7f3c-7abc-8def-0123456789ab'])('accepts %s', (id) => {
    expect(isValidId(id)).toBe(true);
  });
  it.each(['', '.hidden', '..', '../x', 'a/b', 'a\\b', 'é', '0'.repeat(129), 'a b', 'x\0'])(
    'rejects %j',
    (id) => {
      expect(isValidId(id)).toBe(false);
      expect(codeOf(() => assertValidId(id))).toBe('INVALID');
    },
  );
  it('generates valid, time-ordered ids', async () => {
    const first = generateId();
    await new Promise((resolve) => setTimeout(resolve, 2));
    const second = generateId();
    expect(isValidId(first) && isValidId(second)).toBe(true);
    expect(first < second).toBe(true);
  });
});

describe('planAppend', () => {
  it('writes when the batch starts at the next seq', () => {
    expect(planAppend('s', 3, batch(3, 4))).toEqual({ kind: 'write' });
  });
  it('is CONFLICT ahead of the log and when overlapping its end', () => {
    expect(codeOf(() => planAppend('s', 3, batch(5)))).toBe('CONFLICT');
    expect(codeOf(() => planAppend('s', 3, batch(2, 3)))).toBe('CONFLICT');
  });
  it('asks for a comparison when wholly stored, which decides retry vs CONFLICT', () => {
    expect(planAppend('s', 3, batch(1, 2))).toEqual({ kind: 'compare', fromSeq: 1, toSeq: 2 });
    const stored = [ev(1), ev(2)];
    expect(codeOf(() => assertSameEvents('s', stored, batch(1, 2)))).toBe('OK');
    expect(codeOf(() => assertSameEvents('s', [ev(1), ev(2, 'other')], batch(1, 2)))).toBe('CONFLICT');
    expect(
      codeOf(() => assertSameEvents('s', [ev(1), { ...ev(2), data: { seq: 2, x: 1 } }], batch(1, 2))),
    ).toBe('CONFLICT');
  });
});

describe('commit state', () => {
  const isBoundary = boundaryPredicate();
  it('tracks the last boundary and the interrupted tail', () => {
    expect(commitStateOf([], isBoundary)).toEqual({ committedSeq: -1, interrupted: false });
    expect(commitStateOf([ev(0), ev(1, 'turn/end')], isBoundary)).toEqual({
      committedSeq: 1,
      interrupted: false,
    });
    expect(commitStateOf([ev(0), ev(1, 'turn/end'), ev(2)], isBoundary)).toEqual({
      committedSeq: 1,
      interrupted: true,
    });
    expect(commitStateOf([ev(0)], isBoundary)).toEqual({ committedSeq: -1, interrupted: true });
    expect(commitStateOf([ev(0, 'step/done')], boundaryPredicate(['step/done']))).toEqual({
      committedSeq: 0,
      interrupted: false,
    });
  });
  it('folds incrementally to what a forward walk over every event gives', () => {
    // The reference: the last boundary's seq, interrupted when a later event exists.
    const walk = (prev: { committedSeq: number; interrupted: boolean }, types: string[], from: number) => {
      let { committedSeq, interrupted } = prev;
      types.forEach((type, i) => {
        if (isBoundary({ type })) committedSeq = from + i;
        interrupted = from + i > committedSeq;
      });
      return { committedSeq, interrupted };
    };
    const types = fc.array(fc.constantFrom('note', 'turn/end', 'session/end'), { maxLength: 12 });
    fc.assert(
      fc.property(types, types, (first, second) => {
        const start = commitStateOf(
          first.map((type, i) => ev(i, type)),
          isBoundary,
        );
        expect(start).toEqual(walk({ committedSeq: -1, interrupted: false }, first, 0));
        const next = advanceCommitState(
          start,
          second.map((type, i) => ev(first.length + i, type)),
          isBoundary,
        );
        expect(next).toEqual(walk(start, second, first.length));
      }),
    );
  });
  it('updates a summary incrementally and derives the first prompt', () => {
    const meta = { id: 's', createdAt: time, cwd: '/w' };
    let summary = emptySummary(meta);
    summary = summaryAfterAppend(
      summary,
      [ev(0, 'user/message', { text: '  fix\nthe   bug ' }), ev(1)],
      isBoundary,
      'T1',
    );
    expect(summary).toMatchObject({
      eventCount: 2,
      committedSeq: -1,
      interrupted: true,
      firstPrompt: 'fix the bug',
      updatedAt: 'T1',
    });
    summary = summaryAfterAppend(
      summary,
      [ev(2, 'user/message', 'second'), ev(3, 'turn/end')],
      isBoundary,
      'T2',
    );
    expect(summary).toMatchObject({
      eventCount: 4,
      committedSeq: 3,
      interrupted: false,
      firstPrompt: 'fix the bug',
    });
    expect(promptOf(ev(0, 'user/message', 'x'.repeat(500)))?.length).toBe(200);
    expect(promptOf(ev(0, 'user/message', { content: 'hello' }))).toBe('hello');
    expect(promptOf(ev(0, 'tool/call', 'hello'))).toBeUndefined();
  });
});

describe('validation of create, update and list', () => {
  it('builds meta and the pending patch', () => {
    const { meta, patch } = validateCreate(
      { id: 'abc', cwd: '/w', parent: { id: 'p', seq: 4 }, title: 'T', tags: ['a'] },
      generateId,
    );
    expect(meta).toMatchObject({ id: 'abc', cwd: '/w', parent: { id: 'p', seq: 4 } });
    expect(patch).toEqual({ title: 'T', tags: ['a'] });
    expect(isValidId(validateCreate(undefined, generateId).meta.id)).toBe(true);
    const copied = validateCreate({ id: 'c', createdAt: '2026-01-02T03:04:05+01:00' }, generateId).meta;
    expect(copied.createdAt).toBe('2026-01-02T02:04:05.000Z');
  });
  it.each([
    [{ id: '../x' }],
    [{ cwd: 5 }],
    [{ parent: { id: 'p' } }],
    [{ parent: { id: '/', seq: 1 } }],
    [{ tags: 'a' }],
    [{ createdAt: 'yesterday' }],
    [{ bogus: 1 }],
    ['str'],
  ])('rejects create(%j)', (init) => {
    expect(codeOf(() => validateCreate(init, generateId))).toBe('INVALID');
  });
  it('validates and copies patches', () => {
    const attrs = { model: { name: 'x' } };
    const patch = validatePatch({ title: 't', attrs });
    attrs.model.name = 'changed';
    expect(patch.attrs).toEqual({ model: { name: 'x' } });
    expect(codeOf(() => validatePatch({ attrs: { n: Number.NaN } }))).toBe('INVALID');
    expect(codeOf(() => validatePatch({ attrs: [] }))).toBe('INVALID');
    expect(codeOf(() => validatePatch({ eventCount: 3 }))).toBe('INVALID');
    expect(codeOf(() => validatePatch({ tags: [1] }))).toBe('INVALID');
  });
  it('applies patches without touching counts', () => {
    const base = emptySummary({ id: 's', createdAt: time });
    const next = applyPatch(base, { title: 'x', tags: ['t'] }, 'T9');
    expect(next).toMatchObject({ title: 'x', tags: ['t'], eventCount: 0, updatedAt: 'T9' });
    expect(base.title).toBeUndefined();
  });
  it('orders, pages and rejects bad cursors', () => {
    const rows = [
      { id: 'b', updatedAt: '2026-01-02' },
      { id: 'a', updatedAt: '2026-01-02' },
      { id: 'c', updatedAt: '2026-01-03' },
      { id: 'd', updatedAt: '2026-01-01' },
    ].sort(compareForList);
    expect(rows.map((r) => r.id)).toEqual(['c', 'a', 'b', 'd']);
    const cursor = decodeCursor(encodeCursor(rows[1]!));
    expect(rows.filter((r) => isAfterCursor(r, cursor)).map((r) => r.id)).toEqual(['b', 'd']);
    expect(codeOf(() => decodeCursor('not a cursor'))).toBe('INVALID');
    expect(codeOf(() => validateListQuery({ limit: 0 }))).toBe('INVALID');
    expect(codeOf(() => validateListQuery({ cursor: 7 }))).toBe('INVALID');
    expect(validateListQuery(undefined).limit).toBe(100);
  });
  it('keeps updatedAt moving forward for one session', () => {
    expect(nextUpdatedAt('2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z')).toBe(
      '2026-01-01T00:00:01.000Z',
    );
    expect(nextUpdatedAt('2026-01-01T00:00:01.000Z', '2026-01-01T00:00:01.000Z')).toBe(
      '2026-01-01T00:00:01.001Z',
    );
    expect(nextUpdatedAt('2026-01-01T00:00:05.000Z', '2026-01-01T00:00:01.000Z')).toBe(
      '2026-01-01T00:00:05.001Z',
    );
  });
  it('steps a valid timestamp of any calendar date one millisecond, as Date does', () => {
    const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 9999 }).map((n) => String(n).padStart(4, '0')),
        two(12),
        two(31),
        two(24),
        two(59),
        two(59),
        fc.integer({ min: 0, max: 999 }).map((n) => String(n).padStart(3, '0')),
        (y, mo, d, h, mi, s, ms) => {
          const previous = `${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}Z`;
          const at = Date.parse(previous);
          if (Number.isNaN(at)) return;
          expect(nextUpdatedAt(previous, '0000-01-01T00:00:00.000Z')).toBe(new Date(at + 1).toISOString());
        },
      ),
      { numRuns: 5000 },
    );
  });
  it('steps one millisecond past any previous time, across second, day and year ends', () => {
    const now = '2000-01-01T00:00:00.000Z';
    for (const previous of [
      '2026-01-01T00:00:00.998Z',
      '2026-01-01T00:00:59.999Z',
      '2026-12-31T23:59:59.999Z',
      '2026-06-30T12:00:00.042Z',
    ]) {
      const next = nextUpdatedAt(previous, now);
      expect(Date.parse(next) - Date.parse(previous), previous).toBe(1);
      expect(next > previous, previous).toBe(true);
      expect(next).toBe(new Date(Date.parse(previous) + 1).toISOString());
    }
    // A previous time stored in another valid spelling goes through Date and comes back canonical.
    expect(nextUpdatedAt('2026-01-01T02:00:00.500+02:00', now)).toBe('2026-01-01T00:00:00.501Z');
    // So does one in the canonical shape that is not a normalised date.
    expect(nextUpdatedAt('2099-01-01T24:00:00.000Z', now)).toBe('2099-01-02T00:00:00.001Z');
  });
  it('gives the current time, formatted like toISOString, to every call in one millisecond', () => {
    const before = Date.now();
    const first = nowIso();
    const second = nowIso();
    const after = Date.now();
    expect(first).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Date.parse(first)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(second)).toBeLessThanOrEqual(after);
    expect(second >= first).toBe(true);
  });
});

describe('errors', () => {
  it('wraps storage faults as IO with errno, cause and retryable', () => {
    const enospc = Object.assign(new Error('no space'), { code: 'ENOSPC' });
    const wrapped = toIoError(enospc, 'writing x', 's1');
    expect(wrapped).toMatchObject({ code: 'IO', errno: 'ENOSPC', retryable: true, sessionId: 's1' });
    expect(wrapped.cause).toBe(enospc);
    expect(toIoError(Object.assign(new Error('bad'), { code: 'EIO' }), 'x').retryable).toBe(false);
    expect(toIoError({ code: 'SQLITE_BUSY_SNAPSHOT' }, 'x').retryable).toBe(true);
    expect(toIoError(wrapped, 'again')).toBe(wrapped);
    expect(JSON.parse(JSON.stringify(wrapped))).toMatchObject({ code: 'IO', errno: 'ENOSPC' });
  });
  it('treats only ENOENT as absence', () => {
    expect(isENOENT({ code: 'ENOENT' })).toBe(true);
    for (const code of ['ENOTDIR', 'EACCES', 'EIO', undefined]) expect(isENOENT({ code })).toBe(false);
    expect(errnoOf('x')).toBeUndefined();
  });
  it('recognises errors by brand, not prototype', () => {
    const foreign = Object.assign(Object.create(null), { [Symbol.for('tidemark.error')]: true, code: 'IO' });
    expect(isTidemarkError(foreign, 'IO')).toBe(true);
    expect(isTidemarkError(new Error('x'))).toBe(false);
    expect(isTidemarkError(new TidemarkError('CLOSED', 'c'), 'IO')).toBe(false);
  });
});

describe('summaryAfterCut', () => {
  const base = {
    id: 's',
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-02T00:00:00.000Z',
    eventCount: 5,
    committedSeq: 2,
    interrupted: true,
    title: 't',
  };

  it('takes counts and commit state from the kept events, and keeps updatedAt and fields', () => {
    const kept = [
      { seq: 0, type: 'x' },
      { seq: 1, type: 'x' },
      { seq: 2, type: 'turn/end' },
    ];
    expect(summaryAfterCut(base, kept, boundaryPredicate())).toEqual({
      ...base,
      eventCount: 3,
      committedSeq: 2,
      interrupted: false,
    });
  });

  it('accepts a count and commit state instead of the events', () => {
    expect(summaryAfterCut(base, { eventCount: 0, committedSeq: -1, interrupted: false })).toMatchObject({
      eventCount: 0,
      committedSeq: -1,
      interrupted: false,
      updatedAt: base.updatedAt,
    });
  });
});
