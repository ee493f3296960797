// Appending a prepared batch: the session's first batch writes its sessions row from the
// reservation, later ones update the row; an exact retry of stored events is acknowledged without
// writing. One write transaction either way. With `after` (append(…, { after })), the event the
// caller planned the batch on is checked in that same transaction, before anything is written.
import {
  type AppendResult,
  applyPatch,
  assertSameEvents,
  assertStoredAfter,
  dataJsonOf,
  emptySummary,
  errors,
  nextUpdatedAt,
  nowIso,
  type PreparedEvent,
  planAppend,
  type Reservation,
  type SessionEvent,
  type SessionSummary,
  summaryAfterAppend,
} from '@tidemark/core';
import type { SqliteConnection } from './connection.js';
import { appendError, mapSqliteError, type SqliteErrorContext } from './errors.js';
import {
  type AppendHeadRow,
  decodeAppendHead,
  decodeEventRows,
  type EventRow,
  eventChecksum,
  summaryColumns,
} from './rows.js';
import { SQLITE_SCHEMA_VERSION } from './schema.js';

/**
 * Appends `batch` (validated) to session `id`, stored or reserved (`reservation`, when this store
 * holds one for the id). Throws NOT_FOUND when the session is neither, CONFLICT when another
 * writer stored these seqs first or the stored event at `after.seq` is not `after`, CORRUPT when
 * the stored head or compared events are damaged.
 */
export function appendBatch(
  conn: SqliteConnection,
  id: string,
  batch: readonly PreparedEvent[],
  reservation: Reservation | undefined,
  after?: PreparedEvent,
): AppendResult {
  // Relaxed durability defers syncs to boundary events: a batch that closes a unit of work
  // commits with synchronous=FULL, whose WAL fsync also makes every earlier commit durable.
  const syncNow = conn.relaxed && batch.some((item) => conn.isBoundary(item.event));
  const write = () =>
    conn.transactionUnmapped('write', id, () => appendInTransaction(conn, id, batch, reservation, after));
  try {
    return syncNow ? conn.durably(appendContext(conn, id), write) : write();
  } catch (error) {
    // The error context is built only on failure: the common path allocates none of its strings.
    throw appendError(mapSqliteError(error, appendContext(conn, id)), id);
  }
}

/** The error context of an append to session `id`. */
export function appendContext(conn: SqliteConnection, id: string): SqliteErrorContext {
  return conn.context(`appending to session ${id}`, id, 'events');
}

/**
 * The writes of one append inside an open write transaction (its own, or a group commit's
 * savepoint). Throws as {@link appendBatch} does, with driver errors unmapped.
 */
export function appendInTransaction(
  conn: SqliteConnection,
  id: string,
  batch: readonly PreparedEvent[],
  reservation: Reservation | undefined,
  after?: PreparedEvent,
): AppendResult {
  // One query for the summary fields an append changes and the last stored seq (and, with
  // `after`, the event stored at its seq).
  conn.step('SELECT sessions', id);
  const row = (
    after === undefined ? conn.stmts.appendHead.get(id) : conn.stmts.appendHeadAfter.get(after.event.seq, id)
  ) as AppendHeadRow | undefined;
  if (row === undefined) {
    // Also with a reservation: its first batch would otherwise collide with the orphaned rows.
    conn.assertNoOrphanEvents(id);
    if (reservation === undefined) throw errors.notFound(id);
  }
  let nextSeq = 0;
  let summary: SessionSummary | undefined;
  if (row !== undefined) ({ nextSeq, summary } = decodeAppendHead(id, row, conn.file));
  // Before the batch is planned, so that a retry of stored events is checked too. The write lock
  // is held since BEGIN IMMEDIATE: no other connection can delete or rewrite the session between
  // this check and the COMMIT.
  if (after !== undefined) assertAfterStored(conn, id, row, after);
  const plan = planAppend(id, nextSeq, batch);
  if (plan.kind === 'compare') {
    conn.step('SELECT events', id);
    const rows = conn.stmts.eventRange.all(id, plan.fromSeq, plan.toSeq) as EventRow[];
    assertSameEvents(id, decodeEventRows(id, rows, plan.fromSeq, conn.file), batch);
    return { nextSeq };
  }
  const now = nowIso();
  const appended = batch.map((item) => item.event);
  if (summary === undefined) insertSessionRow(conn, id, reservation!, appended, now);
  else updateSessionRow(conn, id, summary, appended, now);
  insertEvents(conn, id, batch);
  return { nextSeq: nextSeq + batch.length };
}

/**
 * CONFLICT (core's `assertStoredAfter`) unless the event stored at `after.seq` is `after`: read
 * with the head (`appendHeadAfter`, columns 6 on; its seq is null when there is none). A row whose
 * columns are exactly what an append of `after` writes (same type, time and data text, sound
 * checksum) is `after`; any other row is decoded and compared as events, so that data stored with
 * other key order or spacing still matches.
 */
function assertAfterStored(
  conn: SqliteConnection,
  id: string,
  head: AppendHeadRow | undefined,
  after: PreparedEvent,
): void {
  const seq = after.event.seq;
  const row = head === undefined || head[6] === null ? undefined : (head.slice(6) as EventRow);
  if (row !== undefined && isRowOf(row, after)) return;
  assertStoredAfter(id, row === undefined ? undefined : decodeEventRows(id, [row], seq, conn.file)[0], after);
}

/**
 * True when `row` holds the columns an append of `prepared` writes. Equal text parses to equal
 * data, and the checksum is the one decoding would check: the same verdict as decoding the row and
 * comparing events, without parsing the data.
 */
function isRowOf(row: EventRow, prepared: PreparedEvent): boolean {
  const { type, time } = prepared.event;
  const data = row[3];
  return (
    row[1] === type &&
    row[2] === time &&
    typeof data === 'string' &&
    data === dataJsonOf(prepared) &&
    row[4] === eventChecksum(type, time, data)
  );
}

/** The sessions row of a reserved session, written with its first batch. */
function insertSessionRow(
  conn: SqliteConnection,
  id: string,
  { meta, patch }: Reservation,
  appended: readonly SessionEvent[],
  now: string,
): void {
  const next = summaryAfterAppend(applyPatch(emptySummary(meta), patch, now), appended, conn.isBoundary, now);
  conn.step('INSERT sessions', id);
  conn.stmts.insertSession.run({
    id,
    format_version: SQLITE_SCHEMA_VERSION,
    created_at: meta.createdAt,
    cwd: meta.cwd ?? null,
    parent_id: meta.parent?.id ?? null,
    parent_seq: meta.parent?.seq ?? null,
    ...summaryColumns(next),
  });
}

/** The summary fields an append changes, on a stored sessions row. */
function updateSessionRow(
  conn: SqliteConnection,
  id: string,
  summary: SessionSummary,
  appended: readonly SessionEvent[],
  now: string,
): void {
  const next = summaryAfterAppend(summary, appended, conn.isBoundary, nextUpdatedAt(summary.updatedAt, now));
  conn.step('UPDATE sessions', id);
  conn.stmts.updateAfterAppend.run(
    next.updatedAt,
    next.eventCount,
    next.committedSeq,
    next.interrupted ? 1 : 0,
    next.firstPrompt ?? null,
    id,
  );
}

function insertEvents(conn: SqliteConnection, id: string, batch: readonly PreparedEvent[]): void {
  for (const item of batch) {
    const { seq, type, time } = item.event;
    const data = dataJsonOf(item);
    conn.step('INSERT events', id);
    conn.stmts.insertEvent.run(id, seq, type, time, data, eventChecksum(type, time, data));
  }
}
