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
  SESSION_COLUMNS,
  type SessionRow,
  sessionRowDamaged,
  summaryColumns,
} from './rows.js';
import { POSTGRES_SCHEMA_VERSION, type TableNames } from './schema.js';

/** What an append needs of a stored session: its identity, next seq and the fields it rewrites. */
export interface Head {
  createdAt: string;
  summary: SessionSummary;
}

/** The stored head of a session (summary, next seq), or undefined when absent (CORRUPT for orphans). */
export async function readHead(db: Connections, t: TableNames, id: string): Promise<Head | undefined> {
  const result = await db.run(db.context(`appending to session ${id}`, id), (s) =>
    s.query<SessionRow & { max_seq: string | null }>(
      'SELECT sessions',
      `SELECT ${SESSION_COLUMNS}, (SELECT max(seq) FROM ${t.events} WHERE session_id = $1) AS max_seq
       FROM (VALUES (1)) AS one LEFT JOIN ${t.sessions} ON id = $1`,
      [id],
    ),
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

function eventArrays(encoded: readonly EncodedEvent[]): unknown[] {
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
  t: TableNames,
  reservation: Reservation,
  summary: SessionSummary,
  encoded: readonly EncodedEvent[],
  context: PgErrorContext,
): Promise<boolean> {
  const { meta } = reservation;
  const c = summaryColumns(summary);
  const result = await db.run(context, (s) =>
    s.query(
      'INSERT sessions+events',
      `WITH head AS (
         INSERT INTO ${t.sessions} (id, format_version, created_at, updated_at, cwd, parent_id, parent_seq,
           next_seq, committed_seq, interrupted, title, first_prompt, tags, attrs)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
         ON CONFLICT (id) DO NOTHING RETURNING id)
       INSERT INTO ${t.events} (session_id, seq, type, time, data, checksum)
       SELECT $1, u.seq, u.type, u.time, u.data, u.checksum
       FROM unnest($15::bigint[], $16::text[], $17::text[], $18::text[], $19::integer[])
         AS u(seq, type, time, data, checksum)
       WHERE EXISTS (SELECT 1 FROM head)`,
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
        ...eventArrays(encoded),
      ],
    ),
  );
  return result.rowCount === encoded.length;
}

/** A later batch: advance next_seq from the head's value and insert, in one statement. */
export async function advance(
  db: Connections,
  t: TableNames,
  id: string,
  head: Head,
  summary: SessionSummary,
  encoded: readonly EncodedEvent[],
  context: PgErrorContext,
): Promise<boolean> {
  const result = await db.run(context, (s) =>
    s.query(
      'UPDATE sessions+INSERT events',
      `WITH head AS (
         UPDATE ${t.sessions} SET next_seq = $2, updated_at = $3, committed_seq = $4, interrupted = $5,
           first_prompt = $6
         WHERE id = $1 AND next_seq = $7 AND updated_at = $8 AND created_at = $9 RETURNING id)
       INSERT INTO ${t.events} (session_id, seq, type, time, data, checksum)
       SELECT $1, u.seq, u.type, u.time, u.data, u.checksum
       FROM unnest($10::bigint[], $11::text[], $12::text[], $13::text[], $14::integer[])
         AS u(seq, type, time, data, checksum)
       WHERE EXISTS (SELECT 1 FROM head)`,
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
        ...eventArrays(encoded),
      ],
    ),
  );
  return result.rowCount === encoded.length;
}
