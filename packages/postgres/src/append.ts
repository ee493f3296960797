// The statements of an append. Each attempt is one autocommit statement: a data-modifying CTE whose
// conditional UPDATE (… WHERE next_seq = $expected) or first INSERT (ON CONFLICT DO NOTHING) gates
// the INSERT of the events, so the claim of the seqs and their rows commit together or not at all.
import { errors, type Reservation, type SessionSummary } from '@tidemark/core';
import type { Connections } from './db.js';
import type { PgErrorContext } from './errors.js';
import {
  type EncodedEvent,
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

/** The stored head of a session (summary, next seq), or undefined when absent (CORRUPT for orphans). */
export async function readHead(db: Connections, sql: Statements, id: string): Promise<Head | undefined> {
  const { text, name } = sql.readHead;
  const result = await db.run(db.context(`appending to session ${id}`, id), (s) =>
    s.query<SessionRow & { max_seq: string | null }>('SELECT sessions', text, [id], name),
  );
  const row = result.rows[0]!;
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

/** A later batch: advance next_seq from the head's value and insert, in one statement. */
export async function advance(
  db: Connections,
  sql: Statements,
  id: string,
  head: Head,
  summary: SessionSummary,
  encoded: readonly EncodedEvent[],
  context: PgErrorContext,
): Promise<boolean> {
  const { text, name } = encoded.length === 1 ? sql.advanceOne : sql.advance;
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
        ...eventParameters(encoded, encoded.length === 1),
      ],
      name,
    ),
  );
  return result.rowCount === encoded.length;
}
