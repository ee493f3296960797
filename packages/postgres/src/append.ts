// The statements of an append. Each attempt is one autocommit statement: a data-modifying CTE whose
// conditional UPDATE (… WHERE next_seq = $expected) or first INSERT (ON CONFLICT DO NOTHING) gates
// the INSERT of the events, so the claim of the seqs and their rows commit together or not at all.
// An append with `after` adds the events row at after.seq to the claim's condition (`AfterRow`):
// checked in the snapshot of the statement that writes, so no other host's delete and rewrite
// can come between the check and the write.
import {
  assertStoredAfter,
  errors,
  type PreparedEvent,
  type Reservation,
  type SessionSummary,
} from '@tidemark/core';
import type { Connections } from './db.js';
import type { PgErrorContext } from './errors.js';
import {
  decodeEventRow,
  type EncodedEvent,
  type EventRow,
  encodeEvent,
  encodeText,
  rowToSummary,
  type SessionRow,
  sessionRowDamaged,
  summaryColumns,
} from './rows.js';
import { POSTGRES_SCHEMA_VERSION } from './schema.js';
import type { Statements } from './statements.js';

/** What an append needs of a stored session: its identity, next seq and the fields it rewrites. */
export interface Head {
  createdAt: string;
  summary: SessionSummary;
}

/**
 * What the claim of an append with `after` requires of the events row at `seq`: exactly these
 * column texts. First the texts an append of `after` writes ({@link afterRowOf}); when a read
 * found the stored row to decode to `after` in other texts (another writer's serialization),
 * that row's own, so that the claim holds exactly when the row is still the one judged equal.
 */
export interface AfterRow {
  seq: number;
  type: string;
  time: string;
  data: string;
}

/** The columns an append of `after` writes ({@link encodeEvent}'s), as the claim's condition. */
export function afterRowOf(after: PreparedEvent): AfterRow {
  const { seq, type, time, data } = encodeEvent(after);
  return { seq, type, time, data };
}

type HeadRow = SessionRow & { max_seq: string | null };

/** The stored head of a session (summary, next seq), or undefined when absent (CORRUPT for orphans). */
export async function readHead(db: Connections, sql: Statements, id: string): Promise<Head | undefined> {
  return (await readHeadAfter(db, sql, id, null)).head;
}

/** The columns the events row at after.seq adds to {@link readHead}'s (all NULL without a row). */
interface AfterColumns {
  after_seq: string | null;
  after_type: string | null;
  after_time: string | null;
  after_data: string | null;
  after_checksum: number | null;
}

/**
 * {@link readHead} and the events row at `seq` (as {@link EventRow}, undefined when there is
 * none or `seq` is null), from one snapshot.
 */
export async function readHeadAfter(
  db: Connections,
  sql: Statements,
  id: string,
  seq: number | null,
): Promise<{ head: Head | undefined; stored: EventRow | undefined }> {
  const { text, name } = sql.readHead;
  const result = await db.run(db.context(`appending to session ${id}`, id), (s) =>
    s.query<HeadRow & AfterColumns>('SELECT sessions', text, [id, seq], name),
  );
  const row = result.rows[0]!;
  const head = headOf(id, row);
  if (row.after_seq === null) return { head, stored: undefined };
  const checksum = row.after_checksum === null ? null : String(row.after_checksum);
  return { head, stored: [row.after_seq, row.after_type, row.after_time, row.after_data, checksum] };
}

/** The head in a row of readHead's columns; CORRUPT for orphaned events or a miscounted log. */
function headOf(id: string, row: HeadRow): Head | undefined {
  if (row.id === null) {
    if (row.max_seq !== null) throw sessionRowDamaged(id);
    return undefined;
  }
  const summary = rowToSummary(row);
  const logEnd = row.max_seq === null ? 0 : Number(row.max_seq) + 1;
  if (logEnd !== summary.eventCount) {
    throw errors.corrupt(
      `session ${id}: the summary counts ${summary.eventCount} events but the log ends at seq ${String(row.max_seq)}`,
      { table: 'sessions', row: `id=${id}`, seq: Math.min(logEnd, summary.eventCount) },
      id,
    );
  }
  return { createdAt: row.created_at, summary };
}

/** The events' columns as parameters: one array per column, or scalars for a single event. */
function eventParameters(encoded: readonly EncodedEvent[], scalar: boolean): unknown[] {
  if (scalar) {
    const [e] = encoded as [EncodedEvent];
    return [e.seq, e.type, e.time, e.data, e.checksum];
  }
  return [
    encoded.map((e) => e.seq),
    encoded.map((e) => e.type),
    encoded.map((e) => e.time),
    encoded.map((e) => e.data),
    encoded.map((e) => e.checksum),
  ];
}

/**
 * The stored head and the event at after.seq, from one snapshot: CONFLICT (core's message) when
 * that event is not `after` (also for a reserved session, which holds none), NOT_FOUND when the
 * session is neither stored nor reserved. Else the head, and the stored row's texts as what the
 * claim must find there.
 */
export async function judgeHeadAfter(
  db: Connections,
  sql: Statements,
  id: string,
  after: PreparedEvent,
  reservation: Reservation | undefined,
): Promise<{ head: Head; afterRow: AfterRow }> {
  const seq = after.event.seq;
  const { head, stored } = await readHeadAfter(db, sql, id, seq);
  if (head === undefined && reservation === undefined) throw errors.notFound(id);
  assertStoredAfter(id, stored === undefined ? undefined : decodeEventRow(id, stored, seq), after);
  // A stored event, so a stored row (readHeadAfter refuses events without one). Decoded, so its
  // columns are text: `after` as this row stores it.
  const [, type, time, data] = stored as string[];
  return { head: head!, afterRow: { seq, type: type!, time: time!, data: data! } };
}

/** The first batch: session row and events in one statement; false when the row existed. */
export async function insertFirst(
  db: Connections,
  sql: Statements,
  reservation: Reservation,
  summary: SessionSummary,
  encoded: readonly EncodedEvent[],
  context: PgErrorContext,
): Promise<boolean> {
  const { meta } = reservation;
  const c = summaryColumns(summary);
  const { text, name } = sql.insertFirst;
  const result = await db.run(context, (s) =>
    s.query(
      'INSERT sessions+events',
      text,
      [
        meta.id,
        POSTGRES_SCHEMA_VERSION,
        meta.createdAt,
        c.updated_at,
        encodeText(meta.cwd),
        meta.parent?.id ?? null,
        meta.parent?.seq ?? null,
        c.next_seq,
        c.committed_seq,
        c.interrupted,
        c.title,
        c.first_prompt,
        c.tags,
        c.attrs,
        ...eventParameters(encoded, false),
      ],
      name,
    ),
  );
  return result.rowCount === encoded.length;
}

/**
 * A later batch: advance next_seq from the head's value and insert, in one statement; with
 * `after`, only when the events row at after.seq holds its texts too.
 */
export async function advance(
  db: Connections,
  sql: Statements,
  id: string,
  head: Head,
  summary: SessionSummary,
  encoded: readonly EncodedEvent[],
  after: AfterRow | undefined,
  context: PgErrorContext,
): Promise<boolean> {
  const one = encoded.length === 1;
  const { text, name } = one ? sql.advanceOne : sql.advance;
  const result = await db.run(context, (s) =>
    s.query(
      'UPDATE sessions+INSERT events',
      text,
      [
        id,
        summary.eventCount,
        summary.updatedAt,
        summary.committedSeq,
        summary.interrupted,
        encodeText(summary.firstPrompt),
        head.summary.eventCount,
        head.summary.updatedAt,
        head.createdAt,
        ...eventParameters(encoded, one),
        ...(after === undefined ? [null, null, null, null] : [after.seq, after.type, after.time, after.data]),
      ],
      name,
    ),
  );
  return result.rowCount === encoded.length;
}
