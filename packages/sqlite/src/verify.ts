// Checking a store for damage without changing anything: one session at a time (its sessions
// row, the orphaned events of a damaged row or key, contiguous seqs, checksums, JSON, the counted
// events, an interrupted turn), or the whole file (`PRAGMA integrity_check`, foreign keys, then
// every session found in either table). Each finding carries its table and row.
import {
  commitStateOf,
  errors,
  type HealthKind,
  isTidemarkError,
  type MaintenanceProblem,
  type SessionEvent,
  type SessionHealth,
  type TidemarkError,
  type VerifyReport,
} from '@tidemark/core';
import type { SqliteConnection } from './connection.js';
import { mapSqliteError, type SqliteErrorContext, sessionRowDamaged } from './errors.js';
import { eventChecksum, eventRowKey, isJsonText, rowToSummary, type SessionRow } from './rows.js';
import { SQLITE_SCHEMA_VERSION } from './schema.js';

/**
 * The session id under which `verify()` reports damage to the database file as a whole (damaged
 * pages or indexes, rows that break a foreign key): no session can have it.
 */
export const WHOLE_DATABASE = '*';

/** Findings kept per kind and session, so that a badly damaged file still yields a readable report. */
const MAX_FINDINGS = 1000;

/** Worst first: the status of a session is the kind of its worst problem. */
const SEVERITY: readonly HealthKind[] = [
  'unreadable',
  'unsupported-format',
  'corrupt',
  'torn',
  'interrupted',
];

/** The problem a typed error describes, with its location. */
export function problemOf(error: TidemarkError, sessionId: string): MaintenanceProblem {
  const kind =
    error.code === 'UNSUPPORTED_FORMAT'
      ? 'unsupported-format'
      : error.code === 'CORRUPT'
        ? 'corrupt'
        : 'unreadable';
  const problem: MaintenanceProblem = { kind, sessionId, message: error.message };
  const { file, table, row, seq, offset } = error.location ?? {};
  if (file !== undefined) problem.file = file;
  if (table !== undefined) problem.table = table;
  if (row !== undefined) problem.row = row;
  if (seq !== undefined) problem.seq = seq;
  if (offset !== undefined) problem.offset = offset;
  return problem;
}

/**
 * Runs `check`; a corruption error it throws (a damaged page, a row that does not decode) becomes
 * a problem of `sessionId` instead. Any other error (IO) is thrown: the check could not be made.
 */
function recording(
  conn: SqliteConnection,
  sessionId: string,
  problems: MaintenanceProblem[],
  check: () => void,
): void {
  try {
    check();
  } catch (error) {
    const context =
      sessionId === WHOLE_DATABASE
        ? conn.context(`verifying ${conn.file}`)
        : conn.context(`verifying session ${sessionId}`, sessionId, 'events');
    const typed = mapSqliteError(error, context);
    if (typed.code !== 'CORRUPT' && typed.code !== 'UNSUPPORTED_FORMAT') throw typed;
    problems.push(problemOf(typed, sessionId));
  }
}

/**
 * Runs `work` in one read transaction. After a statement met damaged pages (which `work` records
 * as a problem), SQLite may fail the COMMIT of that read as well: what was read stands, and the
 * transaction was rolled back.
 */
function inSnapshot<T>(conn: SqliteConnection, context: SqliteErrorContext, work: () => T): T {
  let read: { result: T } | undefined;
  try {
    return conn.transaction('read', context, () => {
      read = { result: work() };
      return read.result;
    });
  } catch (error) {
    if (read !== undefined && isTidemarkError(error) && error.code === 'CORRUPT') return read.result;
    throw error;
  }
}

/** Checks session `id` in one read snapshot. NOT_FOUND when neither table holds it. */
export function verifySession(conn: SqliteConnection, id: string): SessionHealth {
  const context = conn.context(`verifying session ${id}`, id, 'events');
  return inSnapshot(conn, context, () => checkSession(conn, id));
}

function checkSession(conn: SqliteConnection, id: string): SessionHealth {
  const problems: MaintenanceProblem[] = [];
  conn.step('SELECT sessions', id);
  const row = conn.stmts.getSession.get(id);
  if (row === undefined) {
    conn.step('SELECT events', id);
    if (conn.stmts.orphanEvents.get({ id }) === undefined) throw errors.notFound(id);
    problems.push(problemOf(sessionRowDamaged(conn.file, id), id));
    return healthOf(id, problems);
  }
  recording(conn, id, problems, () => rowToSummary(row, conn.file));
  if (row.format_version > SQLITE_SCHEMA_VERSION) {
    const error = errors.unsupportedFormat(row.format_version, SQLITE_SCHEMA_VERSION, id);
    problems.push(problemOf(error, id));
  }
  let log: LogCheck | undefined;
  recording(conn, id, problems, () => {
    log = checkEvents(conn, id, row, problems);
  });
  const health = healthOf(id, problems);
  if (log === undefined) return health;
  const state = commitStateOf(log.sound, conn.isBoundary);
  health.eventCount = log.sound.length;
  health.committedSeq = state.committedSeq;
  if (problems.length === 0 && state.interrupted) {
    const after = log.sound.length - 1 - state.committedSeq;
    problems.push({
      kind: 'interrupted',
      sessionId: id,
      message: `interrupted turn: ${after} event(s) after the last boundary (seq ${state.committedSeq})`,
      seq: state.committedSeq + 1,
    });
    health.status = 'interrupted';
  }
  return health;
}

function healthOf(sessionId: string, problems: MaintenanceProblem[]): SessionHealth {
  const status = SEVERITY.find((kind) => problems.some((p) => p.kind === kind)) ?? 'ok';
  return { sessionId, status, problems };
}

/** What one pass over a session's event rows found. */
interface LogCheck {
  /** The events before the first damaged row (seq and type only). */
  sound: Pick<SessionEvent, 'seq' | 'type'>[];
}

/**
 * One pass over the event rows of `id`: gaps in the seqs, rows that do not match their checksum,
 * data that is not JSON, and a count that differs from the summary row's.
 */
function checkEvents(
  conn: SqliteConnection,
  id: string,
  session: SessionRow,
  problems: MaintenanceProblem[],
): LogCheck {
  const found = { gap: 0, checksum: 0, json: 0 };
  const add = (kind: keyof typeof found, seq: number, message: string) => {
    if (++found[kind] > MAX_FINDINGS) return;
    const at = { table: 'events', row: eventRowKey(id, seq), seq };
    problems.push({ kind: 'corrupt', sessionId: id, message, file: conn.file, ...at });
  };
  const sound: LogCheck['sound'] = [];
  let damaged = false;
  let expected = 0;
  let stored = 0;
  conn.step('SELECT events', id);
  for (const [seq, type, time, data, crc] of conn.stmts.allEvents.iterate(id) as Iterable<unknown[]>) {
    stored++;
    const at = typeof seq === 'number' ? seq : expected;
    if (at !== expected) add('gap', expected, `session ${id}: seqs ${expected}..${at - 1} are missing`);
    expected = at + 1;
    const text = typeof type === 'string' && typeof time === 'string' && typeof data === 'string';
    const intact = text && eventChecksum(type, time, data) === crc;
    if (!intact) add('checksum', at, `session ${id}: event ${at} does not match its checksum`);
    const json = typeof data === 'string' && isJsonText(data);
    if (!json) add('json', at, `session ${id}: event ${at} has data that is not JSON`);
    damaged ||= at !== sound.length || !intact || !json;
    if (!damaged) sound.push({ seq: at, type: type as string });
  }
  if (stored !== session.event_count) {
    problems.push({
      kind: 'corrupt',
      sessionId: id,
      message: `session ${id}: the summary counts ${String(session.event_count)} events, the log holds ${stored}`,
      file: conn.file,
      table: 'sessions',
      row: `id=${id}`,
    });
  }
  return { sound };
}

/**
 * Damage to the file as a whole: `PRAGMA integrity_check` (damaged pages, indexes that disagree
 * with their table) and `foreign_key_check` (events without their sessions row), in one read
 * snapshot. Reported under {@link WHOLE_DATABASE}; empty when the file is sound.
 */
export function databaseProblems(conn: SqliteConnection): MaintenanceProblem[] {
  return inSnapshot(conn, conn.context(`verifying ${conn.file}`), () => fileChecks(conn));
}

/** The checks of {@link databaseProblems}, in the caller's transaction. */
function fileChecks(conn: SqliteConnection): MaintenanceProblem[] {
  const problems: MaintenanceProblem[] = [];
  const file = conn.file;
  recording(conn, WHOLE_DATABASE, problems, () => {
    conn.step('PRAGMA integrity_check');
    const integrity = conn.db.pragma('integrity_check(1000)') as { integrity_check: string }[];
    for (const { integrity_check: message } of integrity) {
      if (message !== 'ok') problems.push({ kind: 'corrupt', sessionId: WHOLE_DATABASE, message, file });
    }
    conn.step('PRAGMA foreign_key_check');
    const orphans = conn.db.pragma('foreign_key_check') as {
      table: string;
      rowid: number | null;
      parent: string;
    }[];
    for (const { table, rowid, parent } of orphans) {
      problems.push({
        kind: 'corrupt',
        sessionId: WHOLE_DATABASE,
        message: `a row of ${table} refers to a missing ${parent} row`,
        file,
        table,
        ...(rowid !== null && { row: `rowid=${rowid}` }),
      });
    }
  });
  return problems;
}

/**
 * Checks the whole file, then every session either table names (a session whose sessions row is
 * damaged is found through its events; the list indexes are not trusted). Each session is checked
 * in a read snapshot of its own; one deleted meanwhile is left out.
 */
export function verifyDatabase(conn: SqliteConnection): VerifyReport {
  const context = conn.context(`verifying ${conn.file}`);
  const ids = new Set<string>();
  const whole = inSnapshot(conn, context, () => {
    const problems = fileChecks(conn);
    recording(conn, WHOLE_DATABASE, problems, () => {
      conn.step('SELECT sessions');
      const query = 'SELECT id FROM sessions NOT INDEXED UNION SELECT session_id FROM events ORDER BY 1';
      for (const id of conn.db.prepare(query).pluck().iterate()) ids.add(String(id));
    });
    return problems;
  });
  const sessions: SessionHealth[] = [];
  for (const id of ids) {
    try {
      sessions.push(verifySession(conn, id));
    } catch (error) {
      if (!isTidemarkError(error) || error.code !== 'NOT_FOUND') throw error;
    }
  }
  const problems = [...whole, ...sessions.flatMap((s) => s.problems)];
  return { checked: sessions.length, sessions, problems };
}
