// Reading stored sessions: has, load (with the optional tail cut), read in pages, list by keyset.
// Every answer comes from one snapshot; a missing sessions row is checked for orphaned events so
// that damage is never answered as absence.
import {
  type CommitState,
  commitStateOf,
  errors,
  type ListProblem,
  type LoadedSession,
  loadedSession,
  nowIso,
  pageFromRows,
  type SessionEvent,
  type SessionMeta,
  type SessionPage,
  type SessionSummary,
  summaryAfterCut,
  type ValidListQuery,
} from '@tidemark/core';
import type { SqliteConnection } from './connection.js';
import { mapSqliteError } from './errors.js';
import { cutTail } from './recovery.js';
import {
  decodeEventRows,
  type EventRow,
  eventRowKey,
  rowToMeta,
  rowToSummary,
  sessionRowOf,
  summaryColumns,
} from './rows.js';
import { SQLITE_SCHEMA_VERSION } from './schema.js';

/** Events fetched per query by `read()`: bounds its memory and keeps each query short. */
export const READ_PAGE_SIZE = 1000;

/** Whether session `id` is stored; CORRUPT when only its events are (a damaged sessions row). */
export function hasSession(conn: SqliteConnection, id: string): boolean {
  const context = conn.context(`looking up session ${id}`, id, 'sessions');
  if (conn.run(context, 'SELECT sessions', () => conn.stmts.hasSession.get(id)) !== undefined) return true;
  conn.assertAbsent(context, id);
  return false;
}

/**
 * Loads session `id` whole. With `tail: 'cut'` an interrupted tail is moved to the quarantine
 * table in the same (write) transaction, and the summary rewritten.
 */
export function loadSession(conn: SqliteConnection, id: string, tail: 'keep' | 'cut'): LoadedSession {
  const context = conn.context(`loading session ${id}`, id, 'events');
  return conn.transaction(tail === 'cut' ? 'write' : 'read', context, () => {
    conn.step('SELECT sessions', id);
    const row = conn.stmts.getSession.get(id);
    if (row === undefined) {
      conn.assertNoOrphanEvents(id);
      throw errors.notFound(id);
    }
    const summary = rowToSummary(row, conn.file);
    const meta = rowToMeta(row, conn.file);
    if (meta.formatVersion > SQLITE_SCHEMA_VERSION)
      throw errors.unsupportedFormat(meta.formatVersion, SQLITE_SCHEMA_VERSION, id);
    conn.step('SELECT events', id);
    const events = decodeEventRows(id, conn.stmts.allEvents.all(id) as EventRow[], 0, conn.file);
    if (events.length !== summary.eventCount) {
      throw errors.corrupt(
        `session ${id}: the summary counts ${summary.eventCount} events but the log holds ${events.length} in ${conn.file}`,
        {
          file: conn.file,
          table: 'events',
          row: `session_id=${id}`,
          seq: Math.min(events.length, summary.eventCount),
        },
        id,
      );
    }
    const state = commitStateOf(events, conn.isBoundary);
    if (tail === 'cut' && state.interrupted) return cutInterruptedTail(conn, meta, summary, events, state);
    return loadedSession(meta, summary, events, state, undefined);
  });
}

/** The tail cut of {@link loadSession}, inside its write transaction. */
function cutInterruptedTail(
  conn: SqliteConnection,
  meta: SessionMeta,
  loaded: SessionSummary,
  all: SessionEvent[],
  before: CommitState,
): LoadedSession {
  const id = meta.id;
  const cut = cutTail(conn.db, conn.file, id, before.committedSeq, nowIso(), (name) => conn.step(name, id));
  const events = all.slice(0, before.committedSeq + 1);
  const state = commitStateOf(events, conn.isBoundary);
  const summary = summaryAfterCut(loaded, { ...state, eventCount: events.length });
  conn.step('UPDATE sessions', id);
  conn.stmts.updateSummary.run({ id, ...summaryColumns(summary) });
  return loadedSession(meta, summary, events, state, {
    cutEvents: cut.cutEvents,
    quarantinedAt: cut.quarantinedAt,
  });
}

/** Where a `read` stream stands: the log it reads (its `created_at`) and the last event it yielded. */
interface ReadPosition {
  createdAt: string;
  lastSeq: number;
  lastCrc: unknown;
}

/** One page of `read`; `done` when no page follows. */
interface ReadPage {
  /** The seq of the page's first event (the stream's start, moved up by `last` on the first page). */
  start: number;
  /** The last seq the stream may yield (fixed by the first page when it reads the last events). */
  toSeq: number;
  events: SessionEvent[];
  done: boolean;
  createdAt: string;
  lastCrc: unknown;
}

/** {@link readEventPages}, an event at a time. */
export async function* readEvents(
  conn: SqliteConnection,
  id: string,
  fromSeq: number,
  toSeq: number,
  assertOpen: () => void,
  last?: number,
): AsyncGenerator<SessionEvent> {
  for await (const page of readEventPages(conn, id, fromSeq, toSeq, assertOpen, last)) yield* page;
}

/**
 * Streams events `fromSeq`..`toSeq` of session `id` (arguments already validated), a page at a
 * time. Paged by seq, each page one short read transaction: a consistent snapshot of the summary
 * row and the page, with no statement or transaction open across a yield (either would hold the
 * connection for every other call of this store). `assertOpen` is the store's CLOSED check, made
 * before each later page: the store may have closed while the consumer held an event. With
 * `last`, only the last events of the range as the first page's snapshot counts them: an index
 * lookup, not a scan.
 */
export async function* readEventPages(
  conn: SqliteConnection,
  id: string,
  fromSeq: number,
  toSeq: number,
  assertOpen: () => void,
  last?: number,
): AsyncGenerator<readonly SessionEvent[]> {
  const context = conn.context(`reading session ${id}`, id, 'events');
  let next = fromSeq;
  let until = toSeq;
  let seen: ReadPosition | undefined;
  for (;;) {
    if (seen !== undefined) assertOpen();
    const page = conn.transaction('read', context, () =>
      readPage(conn, id, next, until, seen, seen === undefined ? last : undefined),
    );
    if (page === undefined) return; // the log was deleted or rewritten under this stream
    yield page.events;
    if (page.done) return;
    until = page.toSeq;
    next = page.start + page.events.length;
    seen = { createdAt: page.createdAt, lastSeq: next - 1, lastCrc: page.lastCrc };
  }
}

/**
 * One page of `read`, inside the caller's read transaction: events `next`.. (at most
 * {@link READ_PAGE_SIZE}, at most `toSeq`), checked against the summary row of the same snapshot.
 * `undefined` when the log this stream has been reading is gone: the sessions row is deleted, its
 * `created_at` changed (deleted and created again), or the last event yielded is missing or
 * different (a tail cut below the reader, maybe followed by new appends). Going on would splice
 * two logs into a history that never existed.
 */
function readPage(
  conn: SqliteConnection,
  id: string,
  next: number,
  toSeq: number,
  seen: ReadPosition | undefined,
  last: number | undefined,
): ReadPage | undefined {
  conn.step('SELECT sessions', id);
  const row = conn.stmts.getSession.get(id);
  if (row === undefined) {
    if (seen !== undefined) return undefined;
    conn.assertNoOrphanEvents(id);
    throw errors.notFound(id);
  }
  const count = rowToSummary(row, conn.file).eventCount;
  const createdAt = String(row.created_at);
  if (seen !== undefined) {
    if (createdAt !== seen.createdAt) return undefined;
    conn.step('SELECT events', id);
    if (conn.stmts.crcAt.get(id, seen.lastSeq) !== seen.lastCrc) return undefined;
  }
  const end = Math.min(toSeq, count - 1);
  if (last !== undefined) {
    // The last events as this snapshot counts them; later pages stop at its end.
    next = Math.max(next, end - last + 1);
    toSeq = end;
  }
  let events: SessionEvent[] = [];
  let lastCrc: unknown;
  if (next <= end) {
    const last = Math.min(end, next + READ_PAGE_SIZE - 1);
    conn.step('SELECT events', id);
    const rows = conn.stmts.eventRange.all(id, next, last) as EventRow[];
    events = decodeEventRows(id, rows, next, conn.file);
    if (events.length < last - next + 1) {
      // The summary of this same snapshot counts the row: it is missing, not deleted meanwhile.
      const missing = next + events.length;
      throw errors.corrupt(
        `session ${id}: seq ${missing} is missing from table events of ${conn.file}`,
        { file: conn.file, table: 'events', row: eventRowKey(id, missing), seq: missing },
        id,
      );
    }
    lastCrc = rows[rows.length - 1]![4];
  }
  const done = next + events.length > end;
  if (done && toSeq >= count) assertNothingPastCount(conn, id, count);
  return { start: next, toSeq, events, done, createdAt, lastCrc };
}

/**
 * Past the counted events: a stored row there means the summary undercounts the log, which load
 * reports as CORRUPT; read must not stream a silently shortened history.
 */
function assertNothingPastCount(conn: SqliteConnection, id: string, count: number): void {
  conn.step('SELECT events', id);
  if (conn.stmts.crcAt.get(id, count) !== undefined) {
    throw errors.corrupt(
      `session ${id}: the summary counts ${count} events but the log holds seq ${count} in ${conn.file}`,
      { file: conn.file, table: 'events', row: `session_id=${id}`, seq: count },
      id,
    );
  }
}

/**
 * One page of summaries, newest first, by keyset on the list indexes. A row that does not decode
 * is a problem of the page, never silently left out; it still places the cursor.
 */
export function listPage(conn: SqliteConnection, q: ValidListQuery): SessionPage {
  const params: Record<string, string | number> = { limit: q.limit + 1 };
  if (q.cwd !== undefined) params.cwd = q.cwd;
  if (q.cursor !== undefined) {
    params.updatedAt = q.cursor.updatedAt;
    params.id = q.cursor.id;
  }
  const { listAll, listAllAfter, listCwd, listCwdAfter } = conn.stmts;
  const statement =
    q.cwd === undefined
      ? q.cursor === undefined
        ? listAll
        : listAllAfter
      : q.cursor === undefined
        ? listCwd
        : listCwdAfter;
  const rows = conn.run(conn.context('listing sessions', undefined, 'sessions'), 'SELECT sessions', () =>
    (statement.all(params) as unknown[][]).map(sessionRowOf),
  );
  const problems: ListProblem[] = [];
  // Undecodable rows (and the extra row past the limit) keep their place as bare keys, so that the
  // cursor follows the last row fetched; the keys are dropped from the page afterwards.
  const keys = new Set<SessionSummary>();
  const ordered = rows.map((row, i) => {
    if (i < q.limit) {
      try {
        return rowToSummary(row, conn.file);
      } catch (error) {
        const id = String(row.id);
        problems.push({ id, error: mapSqliteError(error, conn.context('listing sessions', id)) });
      }
    }
    const key = { id: String(row.id), updatedAt: String(row.updated_at) } as SessionSummary;
    keys.add(key);
    return key;
  });
  const page = pageFromRows(ordered, q.limit, problems);
  return { ...page, sessions: page.sessions.filter((s) => !keys.has(s)) };
}
