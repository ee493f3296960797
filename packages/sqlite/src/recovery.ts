// Taking rows out of a log without destroying them (tail cut), and checking a database file for
// damage (verify) with the location of each finding, for the CLI's `verify`.
import {
  type BoundaryPredicate,
  boundaryPredicate,
  commitStateOf,
  type ErrorLocation,
  TidemarkError,
} from '@tidemark/core';
import Database from 'better-sqlite3';
import { isCorruptionCode, mapSqliteError, sqliteCodeOf } from './errors.js';
import { eventChecksum, eventRowKey, rowToSummary, type SessionRow } from './rows.js';

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
  step?: (name: 'INSERT quarantine' | 'DELETE events') => void,
): { cutEvents: number; quarantinedAt: string } {
  step?.('INSERT quarantine');
  const moved = db
    .prepare(
      `INSERT INTO quarantine (session_id, seq, type, time, data, crc, reason, quarantined_at)
       SELECT session_id, seq, type, time, data, crc, 'interrupted-tail', ? FROM events
       WHERE session_id = ? AND seq > ? ORDER BY seq`,
    )
    .run(now, sessionId, committedSeq).changes;
  step?.('DELETE events');
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
  /** An event row does not match its CRC-32 (bytes changed inside the row). */
  | 'checksum'
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
    checkIntegrity(db, file, problem);
    report.sessions = db.prepare('SELECT count(*) FROM sessions').pluck().get() as number;
    report.events = db.prepare('SELECT count(*) FROM events').pluck().get() as number;
    checkSeqGaps(db, file, problem);
    checkUnparsable(db, file, problem);
    checkChecksums(db, file, problem);
    checkCounts(db, file, problem);
    checkSummaries(db, file, problem);
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

/** Receives the findings of one check of {@link verifySqliteStore}. */
type Finding = (problem: SqliteProblem) => void;

/** Page-level damage: `PRAGMA integrity_check` and `foreign_key_check`. */
function checkIntegrity(db: Database.Database, file: string, problem: Finding): void {
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
}

/** Seqs that do not follow their predecessor (or a first seq other than 0). */
function checkSeqGaps(db: Database.Database, file: string, problem: Finding): void {
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
}

function checkUnparsable(db: Database.Database, file: string, problem: Finding): void {
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
}

/** Checksums need JS (SQLite has no CRC-32): one pass over every event row. */
function checkChecksums(db: Database.Database, file: string, problem: Finding): void {
  let mismatches = 0;
  const rows = db.prepare('SELECT session_id, seq, type, time, data, crc FROM events').raw();
  for (const [sessionId, seq, type, time, data, crc] of rows.iterate() as IterableIterator<unknown[]>) {
    const intact =
      typeof type === 'string' &&
      typeof time === 'string' &&
      typeof data === 'string' &&
      eventChecksum(type, time, data) === crc;
    if (intact || ++mismatches > MAX_FINDINGS) continue;
    problem({
      kind: 'checksum',
      sessionId: String(sessionId),
      message: `session ${String(sessionId)}: event ${String(seq)} does not match its checksum`,
      location: {
        file,
        table: 'events',
        row: eventRowKey(String(sessionId), Number(seq)),
        seq: Number(seq),
      },
    });
  }
}

/** Summary rows whose event count differs from the rows stored. */
function checkCounts(db: Database.Database, file: string, problem: Finding): void {
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
}

/** Summary rows that do not decode. */
function checkSummaries(db: Database.Database, file: string, problem: Finding): void {
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
}

/** Options of {@link repairSqliteStore}. */
export interface SqliteRepairOptions {
  /** Event types that close a unit of work, to recompute commit state (default turn/end, session/end). */
  boundaryTypes?: readonly string[];
  /**
   * Repair only these sessions (default: every session with row-level damage). Damage elsewhere
   * stays as it is and is still reported in `after`.
   */
  sessions?: readonly string[];
}

/** What {@link repairSqliteStore} did. */
export interface SqliteRepairReport {
  file: string;
  /**
   * Sessions whose log was cut back to its sound prefix or whose summary was rebuilt;
   * `quarantinedSummary` when unreadable `tags`/`attrs` text was moved to the quarantine table.
   */
  repaired: {
    sessionId: string;
    keptEvents: number;
    quarantinedEvents: number;
    quarantinedSummary: boolean;
  }[];
  /** Findings a row-level repair cannot fix (b-tree damage): restore from a backup or `.recover`. */
  unrepairable: SqliteProblem[];
  /** The verify report after the repair. */
  after: SqliteVerifyReport;
}

/**
 * Repairs row-level damage found by {@link verifySqliteStore}, destroying nothing: for each session
 * with a seq gap, unparsable data or a wrong count, the events from the first bad seq on are moved
 * to the quarantine table (reason `repair`) and the summary is rebuilt from the sound prefix, all
 * in one transaction. Page-level damage (`integrity`) is reported as unrepairable and left alone.
 */
export async function repairSqliteStore(
  file: string,
  options: SqliteRepairOptions = {},
): Promise<SqliteRepairReport> {
  const before = await verifySqliteStore(file);
  const unrepairable = before.problems.filter((p) => p.kind === 'integrity');
  // Named sessions are repaired whether or not verify listed them: its findings are capped per
  // kind, so damage in one session can crowd out another's. The sound prefix is recomputed below,
  // which changes nothing in a session that turns out to be whole.
  const targets = new Set(
    options.sessions ??
      before.problems
        .filter((p) => p.kind !== 'integrity' && p.sessionId !== undefined)
        .map((p) => p.sessionId!),
  );
  const repaired =
    unrepairable.length === 0 && targets.size > 0
      ? repairSessions(file, targets, boundaryPredicate(options.boundaryTypes))
      : [];
  return { file, repaired, unrepairable, after: await verifySqliteStore(file) };
}

/** One session {@link repairSessions} repaired. */
type RepairedSession = SqliteRepairReport['repaired'][number];

/** Repairs each of `targets` in `file`, all in one IMMEDIATE transaction on a connection of its own. */
function repairSessions(
  file: string,
  targets: ReadonlySet<string>,
  isBoundary: BoundaryPredicate,
): RepairedSession[] {
  const repaired: RepairedSession[] = [];
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { fileMustExist: true });
    db.pragma('synchronous = FULL');
    const conn = db;
    const rowsOf = conn
      .prepare('SELECT seq, type, time, data, crc FROM events WHERE session_id = ? ORDER BY seq')
      .raw();
    conn
      .transaction(() => {
        const now = new Date().toISOString();
        for (const id of targets) {
          const outcome = repairSession(conn, rowsOf, file, id, now, isBoundary);
          if (outcome !== undefined) repaired.push(outcome);
        }
      })
      .immediate();
  } catch (error) {
    throw mapSqliteError(error, { file, what: `repairing ${file}` });
  } finally {
    try {
      db?.close();
    } catch {
      // The transaction's outcome stands either way.
    }
  }
  return repaired;
}

/**
 * Cuts session `id` back to its sound prefix, inside the caller's write transaction: the events
 * from the first bad seq on go to the quarantine table (reason `repair`), the summary is rebuilt,
 * and unreadable `tags`/`attrs` text is set aside in quarantine too. `undefined` when the session
 * has no sessions row. `rowsOf` selects a session's event rows in seq order, raw.
 */
function repairSession(
  conn: Database.Database,
  rowsOf: Database.Statement<[string]>,
  file: string,
  id: string,
  now: string,
  isBoundary: BoundaryPredicate,
): RepairedSession | undefined {
  const session = conn.prepare('SELECT * FROM sessions WHERE id = ?').get(id) as SessionRow | undefined;
  if (session === undefined) return undefined;
  // The sound prefix: contiguous seqs from 0 that match their checksum and parse.
  const kept: { seq: number; type: string }[] = [];
  for (const row of rowsOf.iterate(id) as IterableIterator<unknown[]>) {
    if (!sound(row, kept.length)) break;
    kept.push({ seq: row[0] as number, type: row[1] as string });
  }
  const moved = conn
    .prepare(
      `INSERT INTO quarantine (session_id, seq, type, time, data, crc, reason, quarantined_at)
       SELECT session_id, seq, type, time, data, crc, 'repair', ? FROM events WHERE session_id = ? AND seq >= ?`,
    )
    .run(now, id, kept.length).changes;
  conn.prepare('DELETE FROM events WHERE session_id = ? AND seq >= ?').run(id, kept.length);
  const state = commitStateOf(kept, isBoundary);
  let quarantinedSummary = false;
  const rebuilt = { ...session, event_count: kept.length, committed_seq: state.committedSeq };
  conn
    .prepare('UPDATE sessions SET event_count = ?, committed_seq = ?, interrupted = ? WHERE id = ?')
    .run(kept.length, state.committedSeq, state.interrupted ? 1 : 0, id);
  if (!readable(rebuilt, file) && readable({ ...rebuilt, tags: null, attrs: null }, file)) {
    // Unreadable tags/attrs text is kept in quarantine, not guessed at.
    conn
      .prepare(
        `INSERT INTO quarantine (session_id, seq, type, time, data, reason, quarantined_at)
         VALUES (?, NULL, NULL, NULL, ?, 'repair-summary', ?)`,
      )
      .run(id, JSON.stringify({ tags: session.tags, attrs: session.attrs }), now);
    conn.prepare('UPDATE sessions SET tags = NULL, attrs = NULL WHERE id = ?').run(id);
    quarantinedSummary = true;
  }
  return { sessionId: id, keptEvents: kept.length, quarantinedEvents: moved, quarantinedSummary };
}

function readable(row: SessionRow, file: string): boolean {
  try {
    rowToSummary(row, file);
    return true;
  } catch {
    return false;
  }
}

/** Whether an events row `[seq, type, time, data, crc]` is the intact event `seq`. */
function sound(row: readonly unknown[], seq: number): boolean {
  const [rowSeq, type, time, data, crc] = row;
  if (rowSeq !== seq || typeof type !== 'string' || typeof time !== 'string' || typeof data !== 'string')
    return false;
  if (eventChecksum(type, time, data) !== crc) return false;
  try {
    JSON.parse(data);
    return true;
  } catch {
    return false;
  }
}
