// Paging: building a list page (pageOf, pageFromRows) and walking every page (listAll).
import { describe, expect, it } from 'vitest';
import {
  decodeCursor,
  encodeCursor,
  type ListEntry,
  type ListProblem,
  type ListQuery,
  listAll,
  pageFromRows,
  pageOf,
  type SessionPage,
  type SessionStore,
  type SessionSummary,
  TidemarkError,
  validateListQuery,
} from '../src/index.js';

function summary(id: string, updatedAt: string, cwd?: string): SessionSummary {
  return {
    id,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt,
    eventCount: 1,
    committedSeq: -1,
    interrupted: true,
    ...(cwd !== undefined && { cwd }),
  };
}

const day = (n: number) => `2026-01-${String(n).padStart(2, '0')}T00:00:00.000Z`;
const problem = (id: string): ListProblem => ({
  id,
  error: new TidemarkError('CORRUPT', `${id} is damaged`),
});
const all = [
  summary('a', day(1)),
  summary('b', day(3), '/p'),
  summary('c', day(2), '/p'),
  summary('d', day(3)),
];

async function collect(entries: AsyncIterable<ListEntry>): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of entries) out.push('summary' in entry ? entry.summary.id : `!${entry.problem.id}`);
  return out;
}

/** A store whose list pages `summaries` and reports `problems` on every page, as JSONL may. */
function pagingStore(summaries: SessionSummary[], problems: ListProblem[], calls: ListQuery[]): SessionStore {
  return {
    async list(query?: ListQuery): Promise<SessionPage> {
      calls.push({ ...query });
      return pageOf(summaries, validateListQuery(query), problems);
    },
  } as SessionStore;
}

describe('pageOf', () => {
  it('orders newest first, ties by id, and cuts to the limit with a cursor', () => {
    const page = pageOf(all, validateListQuery({ limit: 3 }));
    expect(page.sessions.map((s) => s.id)).toEqual(['b', 'd', 'c']);
    expect(decodeCursor(page.nextCursor!)).toEqual({ updatedAt: day(2), id: 'c' });
    const rest = pageOf(all, validateListQuery({ limit: 3, cursor: page.nextCursor }));
    expect(rest.sessions.map((s) => s.id)).toEqual(['a']);
    expect(rest.nextCursor).toBeUndefined();
  });

  it('filters by cwd and sorts problems by id', () => {
    const page = pageOf(all, validateListQuery({ cwd: '/p' }), [problem('z'), problem('m')]);
    expect(page.sessions.map((s) => s.id)).toEqual(['b', 'c']);
    expect(page.problems.map((p) => p.id)).toEqual(['m', 'z']);
    expect(page.nextCursor).toBeUndefined();
  });

  it('gives no cursor when the page holds exactly the rest', () => {
    expect(pageOf(all, validateListQuery({ limit: 4 })).nextCursor).toBeUndefined();
  });
});

describe('pageFromRows', () => {
  it('reads the extra row of a limit + 1 fetch as "more follow"', () => {
    const rows = [summary('x', day(5)), summary('y', day(4)), summary('z', day(3))];
    const page = pageFromRows(rows, 2);
    expect(page.sessions.map((s) => s.id)).toEqual(['x', 'y']);
    expect(page.nextCursor).toBe(encodeCursor({ updatedAt: day(4), id: 'y' }));
    expect(pageFromRows(rows.slice(0, 2), 2).nextCursor).toBeUndefined();
  });
});

describe('listAll', () => {
  it('yields every session once across pages, and each problem once though repeated on every page', async () => {
    const calls: ListQuery[] = [];
    const store = pagingStore(all, [problem('q'), problem('p')], calls);
    expect(await collect(listAll(store, { pageSize: 1 }))).toEqual(['b', '!p', '!q', 'd', 'c', 'a']);
    expect(calls).toHaveLength(4);
    expect(calls.every((call) => call.limit === 1)).toBe(true);
  });

  it('passes cwd on every page and stops when no cursor is left', async () => {
    const calls: ListQuery[] = [];
    expect(await collect(listAll(pagingStore(all, [], calls), { cwd: '/p', pageSize: 1 }))).toEqual([
      'b',
      'c',
    ]);
    expect(calls.map((call) => call.cwd)).toEqual(['/p', '/p']);
  });

  it('pages of 1000 by default', async () => {
    const calls: ListQuery[] = [];
    await collect(listAll(pagingStore(all, [], calls)));
    expect(calls).toEqual([{ limit: 1000 }]);
  });

  it('does not yield a session twice when it moves between pages', async () => {
    // Page 2 still shows "a" (the store changed between pages): it comes once.
    const pages: SessionPage[] = [
      { sessions: [summary('a', day(2))], problems: [], nextCursor: 'c1' },
      { sessions: [summary('a', day(1)), summary('b', day(1))], problems: [] },
    ];
    const store = { list: async () => pages.shift()! } as unknown as SessionStore;
    expect(await collect(listAll(store))).toEqual(['a', 'b']);
  });

  it('rejects with the error of a failing page', async () => {
    const store = {
      list: async () => {
        throw new TidemarkError('IO', 'disk gone');
      },
    } as unknown as SessionStore;
    await expect(collect(listAll(store))).rejects.toMatchObject({ code: 'IO' });
  });
});
