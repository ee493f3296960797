// Taking rows out of a log without destroying them (tail cut), and checking a database file for
// damage (verify) with the location of each finding, for the CLI's `verify`.
import { type ErrorLocation, TidemarkError } from '@tidemark/core';
import Database from 'better-sqlite3';
import { isCorruptionCode, mapSqliteError, sqliteCodeOf } from './errors.js';
import { eventRowKey, rowToSummary, type SessionRow } from './rows.js';

/** Where quarantined rows of a session are kept, as reported in `LoadedSession.recovered`. */
export function quarantineAddress(file: string, sessionId: string): string {
  return `sqlite:${file}#quarantine/session_id=${sessionId}`;
}

/**
 * Moves the events after `committedSeq` into the quarantine table (reason `interrupted-tail`).
 * Must run inside the caller's write transaction, which also rewrites the summary.
 */
export function cutTail(
  db: Database.Database,
  file: string,
  sessionId: string,
  committedSeq: number,
  now: string,
): { cutEvents: number; quarantinedAt: string } {
  const moved = db
    .prepare(
      `INSERT INTO quarantine (session_id, seq, type, time, data, reason, quarantined_at)
       SELECT session_id, seq, type, time, data, 'interrupted-tail', ? FROM events
       WHERE session_id = ? AND seq > ? ORDER BY seq`,
    )
    .run(now, sessionId, committedSeq).changes;
  const deleted = db
    .prepare('DELETE FROM events WHERE session_id = ? AND seq > ?')
    .run(sessionId, committedSeq).changes;
  if (moved !== deleted) {
    // Cannot happen inside one transaction; refuse rather than lose a row.
    throw new TidemarkError(
      'IO',
      `cutting the tail of ${sessionId}: copied ${moved} rows but deleted ${deleted}`,
      {
        sessionId,
      },
    );
  }
  return { cutEvents: moved, quarantinedAt: quarantineAddress(file, sessionId) };
}

/** Kinds of damage {@link verifySqliteStore} reports. */
export type SqliteProblemKind =
  /** `PRAGMA integrity_check` or `foreign_key_check` found damage, or the file is not a database. */
  | 'integrity'
  /** A seq is missing (or the first seq is not 0). */
  | 'seq-gap'
  /** An event's `data` column is not JSON. */
  | 'unparsable'
  /** The summary's event count differs from the rows in `events`. */
  | 'count-mismatch'
  /** A summary row holds values no append or update writes. */
  | 'bad-summary';

/** One finding of {@link verifySqliteStore}. */
export interface SqliteProblem {
  kind: SqliteProblemKind;
  message: string;
  /** Session concerned, when the finding is about one. */
  sessionId?: string;
  /** File, table and row key of the finding. */
  location: ErrorLocation;
}

/** Result of {@link verifySqliteStore}. */
export interface SqliteVerifyReport {
  file: string;
  /** True when nothing was found. */
  ok: boolean;
  /** Sessions and events counted (0 when the file could not be read that far). */
  sessions: number;
  events: number;
  problems: SqliteProblem[];
}

/** Findings kept per kind, so that a badly damaged file still yields a readable report. */
const MAX_FINDINGS = 1000;

/**
 * Checks a tidemark SQLite database without changing it (opened read-only): `PRAGMA
 * integrity_check`, foreign keys, contiguous seqs from 0, JSON `data`, summary rows and their event
 * counts. Damage is reported as findings with locations; a fault that stops the check (the file
 * missing or unreadable) rejects with IO.
 */
export async function verifySqliteStore(file: string): Promise<SqliteVerifyReport> {
  const report: SqliteVerifyReport = { file, ok: true, sessions: 0, events: 0, problems: [] };
  const problem = (p: SqliteProblem) => {
    report.problems.push(p);
    report.ok = false;
  };
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    const integrity = db.pragma('integrity_check(1000)', { simple: false }) as { integrity_check: string }[];
    for (const { integrity_check: message } of integrity) {
      if (message !== 'ok') problem({ kind: 'integrity', message, location: { file } });
    }
    for (const row of db.pragma('foreign_key_check') as {
      table: string;
      rowid: number | null;
      parent: string;
    }[]) {
      problem({
        kind: 'integrity',
        message: `a row of ${row.table} refers to a missing ${row.parent} row`,
        location: { file, table: row.table, ...(row.rowid !== null && { row: `rowid=${row.rowid}` }) },
      });
    }
    report.sessions = db.prepare('SELECT count(*) FROM sessions').pluck().get() as number;
    report.events = db.prepare('SELECT count(*) FROM events').pluck().get() as number;
    const gaps = db
      .prepare(
        `SELECT session_id, seq, prev FROM (
           SELECT session_id, seq, lag(seq, 1, -1) OVER (PARTITION BY session_id ORDER BY seq) AS prev FROM events
         ) WHERE seq != prev + 1 LIMIT ${MAX_FINDINGS}`,
      )
      .all() as { session_id: string; seq: number; prev: number }[];
    for (const gap of gaps) {
      const missing = gap.prev + 1;
      problem({
        kind: 'seq-gap',
        sessionId: gap.session_id,
        message: `session ${gap.session_id}: seqs ${missing}..${gap.seq - 1} are missing`,
        location: { file, table: 'events', row: eventRowKey(gap.session_id, missing), seq: missing },
      });
    }
    const unparsable = db
      .prepare(`SELECT session_id, seq, data FROM events WHERE json_valid(data) = 0 LIMIT ${MAX_FINDINGS}`)
      .all() as { session_id: string; seq: number }[];
    for (const row of unparsable) {
      problem({
        kind: 'unparsable',
        sessionId: row.session_id,
        message: `session ${row.session_id}: event ${row.seq} has data that is not JSON`,
        location: { file, table: 'events', row: eventRowKey(row.session_id, row.seq), seq: row.seq },
      });
    }
    const counts = db
      .prepare(
        `SELECT s.id, s.event_count, (SELECT count(*) FROM events e WHERE e.session_id = s.id) AS stored
         FROM sessions s WHERE stored != s.event_count LIMIT ${MAX_FINDINGS}`,
      )
      .all() as { id: string; event_count: number; stored: number }[];
    for (const row of counts) {
      problem({
        kind: 'count-mismatch',
        sessionId: row.id,
        message: `session ${row.id}: the summary counts ${row.event_count} events, the log holds ${row.stored}`,
        location: { file, table: 'sessions', row: `id=${row.id}` },
      });
    }
    for (const row of db.prepare('SELECT * FROM sessions').iterate() as IterableIterator<SessionRow>) {
      try {
        rowToSummary(row, file);
      } catch (error) {
        problem({
          kind: 'bad-summary',
          sessionId: String(row.id),
          message: error instanceof Error ? error.message : String(error),
          location: { file, table: 'sessions', row: `id=${String(row.id)}` },
        });
      }
    }
  } catch (error) {
    if (!isCorruptionCode(sqliteCodeOf(error)))
      throw mapSqliteError(error, { file, what: `verifying ${file}` });
    problem({
      kind: 'integrity',
      message: `${sqliteCodeOf(error)}: ${error instanceof Error ? error.message : String(error)}`,
      location: { file, ...(sqliteCodeOf(error) === 'SQLITE_NOTADB' && { offset: 0 }) },
    });
  } finally {
    try {
      db?.close();
    } catch {
      // Nothing was written; the report stands.
    }
  }
  return report;
}
