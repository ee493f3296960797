// Building `list` pages, and walking them to the end. Backends that gather candidate summaries
// use `pageOf`; keyset (SQL) backends fetch `limit + 1` rows and use `pageFromRows`; callers that
// need every session use `listAll` instead of a hand-written cursor loop.
import { compareForList, encodeCursor, isAfterCursor } from './cursor.js';
import { MAX_LIST_LIMIT, type ValidListQuery } from './session.js';
import type { ListProblem, SessionPage, SessionStore, SessionSummary } from './store.js';

function byId(a: ListProblem, b: ListProblem): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * The page `query` asks for out of `summaries` (every candidate, in any order): filtered by cwd
 * and cursor, sorted with {@link compareForList}, cut to `limit`, with `nextCursor` when more
 * follow. `problems` go on the page sorted by id. The summaries are returned as given (copy them
 * first when the caller must not share them).
 */
export function pageOf(
  summaries: Iterable<SessionSummary>,
  query: ValidListQuery,
  problems: readonly ListProblem[] = [],
): SessionPage {
  const { cwd, cursor } = query;
  const matching: SessionSummary[] = [];
  for (const summary of summaries) {
    if (cwd !== undefined && summary.cwd !== cwd) continue;
    if (cursor !== undefined && !isAfterCursor(summary, cursor)) continue;
    matching.push(summary);
  }
  matching.sort(compareForList);
  return pageFromRows(matching, query.limit, problems);
}

/**
 * A page from rows already filtered and ordered for the query, of which a keyset backend fetched
 * up to `limit + 1`: the extra row only says that more follow.
 */
export function pageFromRows(
  rows: readonly SessionSummary[],
  limit: number,
  problems: readonly ListProblem[] = [],
): SessionPage {
  const sessions = rows.slice(0, limit);
  const page: SessionPage = { sessions, problems: [...problems].sort(byId) };
  if (rows.length > limit) page.nextCursor = encodeCursor(sessions[sessions.length - 1]!);
  return page;
}

/** One item of {@link listAll}: a session, or a session `list` could only report as a problem. */
export type ListEntry = { summary: SessionSummary } | { problem: ListProblem };

/** Options of {@link listAll}. */
export interface ListAllQuery {
  /** Only sessions of this working directory. */
  cwd?: string;
  /** Page size asked of `list` (default 1000). */
  pageSize?: number;
}

/**
 * Every session of `store`, paging `list` until no `nextCursor` is left. Each session comes once,
 * and each problem id once, although a backend may report a problem on every page. Errors of
 * `list` reject the iteration.
 */
export async function* listAll(store: SessionStore, query: ListAllQuery = {}): AsyncIterable<ListEntry> {
  const limit = Math.min(query.pageSize ?? 1000, MAX_LIST_LIMIT);
  const seenSessions = new Set<string>();
  const seenProblems = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await store.list({
      limit,
      ...(query.cwd !== undefined && { cwd: query.cwd }),
      ...(cursor !== undefined && { cursor }),
    });
    for (const summary of page.sessions) {
      // A session changed between pages moves to the front and is not seen again; one that moved
      // back would come twice.
      if (seenSessions.has(summary.id)) continue;
      seenSessions.add(summary.id);
      yield { summary };
    }
    for (const problem of page.problems) {
      if (seenProblems.has(problem.id)) continue;
      seenProblems.add(problem.id);
      yield { problem };
    }
    cursor = page.nextCursor;
  } while (cursor !== undefined);
}
