// What each operation accepts as arguments, where the edges of every limit lie, and what the
// INVALID or CONFLICT error says: callers read these messages to fix their calls.
import { describe, expect, it } from 'vitest';
import {
  applyPatch,
  assertSameEvents,
  assertValidId,
  deleteConflict,
  emptySummary,
  isValidId,
  loadedSession,
  MAX_LIST_LIMIT,
  MAX_TAGS,
  MAX_TEXT_LENGTH,
  planAppend,
  prepareBatch,
  resolveStoreOptions,
  type SessionSummary,
  summaryAfterCut,
  validateCreate,
  validateDeleteOptions,
  validateListQuery,
  validateLoadOptions,
  validatePatch,
  validateRange,
} from '../src/index.js';

const T = '2026-11-29T10:00:00.000Z';

function failure(fn: () => unknown): { code: string; message: string; sessionId?: string } {
  try {
    fn();
  } catch (error) {
    return error as { code: string; message: string; sessionId?: string };
  }
  throw new Error('expected an error');
}

const invalid = (fn: () => unknown) => {
  const error = failure(fn);
  expect(error.code).toBe('INVALID');
  return error.message;
};

describe('read, delete and load arguments', () => {
  it('reads the whole log by default and takes any non-negative integer bounds', () => {
    expect(validateRange(undefined)).toEqual({ fromSeq: 0, toSeq: Number.MAX_SAFE_INTEGER });
    expect(validateRange({})).toEqual({ fromSeq: 0, toSeq: Number.MAX_SAFE_INTEGER });
    expect(validateRange({ fromSeq: 0, toSeq: 0 })).toEqual({ fromSeq: 0, toSeq: 0 });
    expect(validateRange({ fromSeq: 2, toSeq: 5 })).toEqual({ fromSeq: 2, toSeq: 5 });
  });

  it('refuses a range that is not an object, and bounds that are not seqs', () => {
    for (const range of [null, 5, 'x'])
      expect(invalid(() => validateRange(range))).toBe('read: the range must be an object');
    expect(invalid(() => validateRange({ fromSeq: -1 }))).toBe(
      'read: fromSeq must be a non-negative integer',
    );
    expect(invalid(() => validateRange({ toSeq: 1.5 }))).toBe('read: toSeq must be a non-negative integer');
    expect(invalid(() => validateRange({ fromSeq: '1' }))).toBe(
      'read: fromSeq must be a non-negative integer',
    );
    expect(invalid(() => validateRange({ toSeq: Number.NaN }))).toBe(
      'read: toSeq must be a non-negative integer',
    );
  });

  it('takes delete options with an optional version to match', () => {
    expect(validateDeleteOptions(undefined)).toBeUndefined();
    expect(validateDeleteOptions({})).toBeUndefined();
    expect(validateDeleteOptions({ ifUpdatedAt: T })).toBe(T);
    for (const options of [null, 5])
      expect(invalid(() => validateDeleteOptions(options))).toBe('delete: options must be an object');
    expect(invalid(() => validateDeleteOptions({ ifUpdatedAt: 'now' }))).toBe(
      'delete: ifUpdatedAt must be an ISO-8601 timestamp with a zone',
    );
  });

  it('says what changed when a conditional delete loses', () => {
    expect(deleteConflict('s', 'A', 'B')).toMatchObject({
      code: 'CONFLICT',
      message: 'session s: changed since A (now B); not deleted',
      sessionId: 's',
    });
  });

  it('keeps the tail unless asked to cut it', () => {
    expect(validateLoadOptions(undefined)).toBe('keep');
    expect(validateLoadOptions({})).toBe('keep');
    expect(validateLoadOptions({ tail: 'keep' })).toBe('keep');
    expect(validateLoadOptions({ tail: 'cut' })).toBe('cut');
    for (const options of [null, 'cut'])
      expect(invalid(() => validateLoadOptions(options))).toBe('load: options must be an object');
    expect(invalid(() => validateLoadOptions({ tail: 'drop' }))).toBe("load: tail must be 'keep' or 'cut'");
  });

  it('states recovery in a loaded session only when something was recovered', () => {
    const meta = { id: 's', createdAt: T, formatVersion: 2 };
    const summary = emptySummary(meta);
    const state = { committedSeq: -1, interrupted: false };
    expect(loadedSession(meta, summary, [], state)).toStrictEqual({
      meta,
      summary,
      events: [],
      committedSeq: -1,
      interrupted: false,
    });
    const recovered = { truncatedBytes: 3, quarantine: 'q' } as unknown as Parameters<
      typeof loadedSession
    >[4];
    expect(loadedSession(meta, summary, [], { committedSeq: 4, interrupted: true }, recovered)).toMatchObject(
      {
        committedSeq: 4,
        interrupted: true,
        recovered,
      },
    );
  });
});

describe('create arguments', () => {
  const generate = () => 'gen';

  it('refuses an argument that is not an object', () => {
    for (const init of [null, [], 'x', 5])
      expect(invalid(() => validateCreate(init, generate))).toBe('create: the argument must be an object');
    expect(validateCreate(undefined, generate).meta.id).toBe('gen');
  });

  it('names an unknown field, and a bad createdAt', () => {
    expect(invalid(() => validateCreate({ colour: 1 }, generate))).toBe('create: unknown field "colour"');
    expect(invalid(() => validateCreate({ createdAt: 'today' }, generate))).toBe(
      'create: createdAt must be an ISO-8601 timestamp with a zone',
    );
  });

  it('takes a parent seq from -1 (a fork before any event) up, and nothing else', () => {
    expect(validateCreate({ parent: { id: 'p', seq: -1 } }, generate).meta.parent).toEqual({
      id: 'p',
      seq: -1,
    });
    for (const parent of [null, 5])
      expect(invalid(() => validateCreate({ parent }, generate))).toBe('create: parent must be { id, seq }');
    for (const seq of [-2, 1.5, '1'])
      expect(invalid(() => validateCreate({ parent: { id: 'p', seq } }, generate))).toBe(
        'create: parent.seq must be an integer ≥ -1',
      );
    expect(invalid(() => validateCreate({ parent: { seq: 1 } }, generate))).toContain('create: parent.id');
  });

  it('keeps absent optional fields absent', () => {
    const { meta, patch } = validateCreate({ id: 'a', createdAt: T }, generate);
    expect(meta).toStrictEqual({ id: 'a', createdAt: T });
    expect(patch).toStrictEqual({});
    expect(validateCreate({ id: 'a', title: 't', tags: ['x'] }, generate).patch).toStrictEqual({
      title: 't',
      tags: ['x'],
    });
  });
});

describe('update patches', () => {
  it('refuses a patch that is not an object, and names an unknown field', () => {
    for (const patch of [null, [], 'x'])
      expect(invalid(() => validatePatch(patch))).toBe('update: the patch must be an object');
    expect(invalid(() => validatePatch({ colour: 1 }))).toBe(
      'update: unknown field "colour" (allowed: title, firstPrompt, tags, attrs)',
    );
  });

  it('skips fields given as undefined', () => {
    expect(validatePatch({ title: undefined, colour: undefined })).toStrictEqual({});
  });

  it('takes text up to the limit and names the field past it', () => {
    expect(validatePatch({ title: 'x'.repeat(MAX_TEXT_LENGTH) }).title).toHaveLength(MAX_TEXT_LENGTH);
    expect(invalid(() => validatePatch({ firstPrompt: 'x'.repeat(MAX_TEXT_LENGTH + 1) }))).toBe(
      `update: firstPrompt: must be a string of at most ${MAX_TEXT_LENGTH} characters`,
    );
    expect(invalid(() => validatePatch({ title: 5 }))).toBe(
      `update: title: must be a string of at most ${MAX_TEXT_LENGTH} characters`,
    );
    expect(invalid(() => validatePatch({ title: 'a\uD800' }))).toBe(
      'update: title: must be well-formed Unicode text, but has a lone UTF-16 surrogate at index 1',
    );
  });

  it('takes up to the most tags and names the bad tag', () => {
    expect(validatePatch({ tags: Array.from({ length: MAX_TAGS }, (_, i) => `t${i}`) }).tags).toHaveLength(
      MAX_TAGS,
    );
    expect(invalid(() => validatePatch({ tags: Array.from({ length: MAX_TAGS + 1 }, () => 't') }))).toBe(
      `update: tags: must be an array of at most ${MAX_TAGS} strings`,
    );
    expect(invalid(() => validatePatch({ tags: 't' }))).toBe(
      `update: tags: must be an array of at most ${MAX_TAGS} strings`,
    );
    expect(invalid(() => validatePatch({ tags: ['a', 1] }))).toBe(
      `update: tags[1]: must be a string of at most ${MAX_TEXT_LENGTH} characters`,
    );
  });

  it('takes attrs only as a JSON object within the size limit', () => {
    for (const attrs of [null, [], 'x'])
      expect(invalid(() => validatePatch({ attrs }))).toBe('update: attrs: must be a JSON object');
    expect(invalid(() => validatePatch({ attrs: { a: Number.NaN } }))).toBe('update: attrs.a: NaN');
    const big = { a: 'x'.repeat(1024 * 1024) };
    expect(invalid(() => validatePatch({ attrs: big }))).toBe(
      `update: attrs: serialized attrs are ${1024 * 1024 + 8} bytes, over the limit of ${1024 * 1024}`,
    );
    expect(validatePatch({ attrs: { a: 'x'.repeat(1024 * 1024 - 8) } }).attrs).toBeDefined();
  });

  it('applies only the fields a patch holds', () => {
    const summary = emptySummary({ id: 's', createdAt: T });
    expect(applyPatch(summary, {}, 'U')).toStrictEqual({ ...summary, updatedAt: 'U' });
    expect(emptySummary({ id: 's', createdAt: T })).toStrictEqual({
      id: 's',
      createdAt: T,
      updatedAt: T,
      eventCount: 0,
      committedSeq: -1,
      interrupted: false,
    });
  });
});

describe('list arguments', () => {
  it('refuses a query that is not an object', () => {
    for (const query of [null, [], 'x'])
      expect(invalid(() => validateListQuery(query))).toBe('list: the query must be an object');
    expect(validateListQuery(undefined)).toStrictEqual({ limit: 100 });
  });

  it('takes a limit from 1 to the largest page', () => {
    expect(validateListQuery({ limit: 1 }).limit).toBe(1);
    expect(validateListQuery({ limit: MAX_LIST_LIMIT }).limit).toBe(MAX_LIST_LIMIT);
    for (const limit of [0, MAX_LIST_LIMIT + 1, 1.5, '5'])
      expect(invalid(() => validateListQuery({ limit }))).toBe(
        `list: limit must be an integer from 1 to ${MAX_LIST_LIMIT}`,
      );
  });

  it('names a cursor or cwd of the wrong type', () => {
    expect(invalid(() => validateListQuery({ cursor: 5 }))).toBe('list: cursor must be a string');
    expect(invalid(() => validateListQuery({ cwd: 5 }))).toBe(
      `list: cwd: must be a string of at most ${MAX_TEXT_LENGTH} characters`,
    );
  });
});

describe('the seq rules of append', () => {
  const batch = (...seqs: number[]) =>
    prepareBatch(seqs.map((seq) => ({ seq, type: 't', time: T, data: seq })));

  it('says where a batch ahead of the log or overlapping its end starts', () => {
    expect(failure(() => planAppend('s', 3, batch(5)))).toMatchObject({
      code: 'CONFLICT',
      message: 'session s: batch starts at seq 5 but the next seq is 3',
      sessionId: 's',
    });
    expect(failure(() => planAppend('s', 3, batch(2, 3)))).toMatchObject({
      code: 'CONFLICT',
      message: 'session s: batch 2..3 overlaps the stored events (next seq is 3)',
      sessionId: 's',
    });
  });

  // A retry must match every field: a different type, time or seq at a stored seq is a conflict.
  it('takes a stored batch as a retry only when seq, type, time and data all match', () => {
    const stored = batch(0, 1).map((p) => p.event);
    expect(() => assertSameEvents('s', stored, batch(0, 1))).not.toThrow();
    const differing = [
      [{ ...stored[0]!, type: 'u' }, stored[1]!],
      [{ ...stored[0]!, time: '2026-11-29T10:00:01.000Z' }, stored[1]!],
      [{ ...stored[0]!, seq: 7 }, stored[1]!],
      [stored[0]!],
    ];
    for (const other of differing)
      expect(failure(() => assertSameEvents('s', other, batch(0, 1)))).toMatchObject({
        code: 'CONFLICT',
        message: 'session s: seq 0 is already stored with different events',
        sessionId: 's',
      });
  });

  it('needs the boundary rule to cut to a list of kept events', () => {
    const summary = emptySummary({ id: 's', createdAt: T }) as SessionSummary;
    expect(() => summaryAfterCut(summary, [] as never, undefined as never)).toThrow(TypeError);
  });
});

describe('session ids', () => {
  // The pattern alone would accept a number (it tests its string form); an id must be a string.
  it('takes only strings', () => {
    expect(isValidId(5)).toBe(false);
    expect(isValidId('5')).toBe(true);
  });

  it('shows the refused id in the message, cut to 60 characters', () => {
    expect(invalid(() => assertValidId('a/b'))).toBe(
      `id: "a/b" is not a session id (1 to 128 characters of A-Z a-z 0-9 . _ -, not starting with '.')`,
    );
    expect(invalid(() => assertValidId(`${'x'.repeat(60)}/`, 'open: id'))).toBe(
      `open: id: "${'x'.repeat(60)}…" is not a session id (1 to 128 characters of A-Z a-z 0-9 . _ -, not starting with '.')`,
    );
    expect(invalid(() => assertValidId(`${'x'.repeat(59)}/`))).toContain(`"${'x'.repeat(59)}/"`);
    expect(invalid(() => assertValidId(5))).toContain('id: 5 is not a session id');
  });
});

describe('store options', () => {
  it('takes limits from 1 up to the largest event, and names the bad one', () => {
    expect(resolveStoreOptions({ maxEventBytes: 1, maxDepth: 1 }, 'open').limits).toEqual({
      maxEventBytes: 1,
      maxDepth: 1,
    });
    expect(resolveStoreOptions({ maxEventBytes: 16 * 1024 * 1024 }, 'open').limits.maxEventBytes).toBe(
      16 * 1024 * 1024,
    );
    expect(invalid(() => resolveStoreOptions({ maxEventBytes: 16 * 1024 * 1024 + 1 }, 'open'))).toBe(
      `open: maxEventBytes must be an integer from 1 to ${16 * 1024 * 1024}, got ${16 * 1024 * 1024 + 1}`,
    );
    expect(invalid(() => resolveStoreOptions({ maxEventBytes: 0 }, 'open'))).toBe(
      `open: maxEventBytes must be an integer from 1 to ${16 * 1024 * 1024}, got 0`,
    );
    expect(invalid(() => resolveStoreOptions({ maxDepth: 0 }, 'open'))).toBe(
      'open: maxDepth must be a positive integer, got 0',
    );
    expect(invalid(() => resolveStoreOptions({ maxDepth: 2 ** 60 }, 'open'))).toBe(
      `open: maxDepth must be a positive integer, got ${2 ** 60}`,
    );
  });

  it('names a bad boundary type by its index', () => {
    expect(invalid(() => resolveStoreOptions({ boundaryTypes: ['a', ''] }, 'open'))).toBe(
      'open: boundaryTypes[1] must be a non-empty string',
    );
    expect(invalid(() => resolveStoreOptions({ boundaryTypes: ['a', 'b\uDC00'] }, 'open'))).toBe(
      'open: boundaryTypes[1] must be well-formed Unicode text',
    );
  });
});
