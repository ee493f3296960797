// Taking rows out of a log without destroying them (tail cut, repair) and checking sessions for
// damage (verify), in the report shapes of core's StoreMaintenance.
import {
  type BoundaryPredicate,
  commitStateOf,
  errors,
  isTidemarkError,
  type MaintenanceProblem,
  nowIso,
  type RecoveryReport,
  type RepairOptions,
  type RepairReport,
  type SessionEvent,
  type SessionHealth,
  type VerifyReport,
} from '@tidemark/core';
import type { Connections, Session } from './db.js';
import {
  decodeEventRow,
  EVENT_COLUMNS,
  type EventRow,
  rowToSummary,
  SESSION_COLUMNS,
  type SessionRow,
} from './rows.js';
import type { TableNames } from './schema.js';
import { sessionRow } from './snapshot.js';

/** Where quarantined rows of a session are kept. */
export function quarantineAddress(schema: string, sessionId: string): string {
  return `postgres:${schema}.quarantine#session_id=${sessionId}`;
}

/** Moves events after `afterSeq` to quarantine with `reason`; inside the caller's transaction. */
async function moveToQuarantine(
  s: Session,
  t: TableNames,
  sessionId: string,
  afterSeq: number,
  reason: string,
  now: string,
): Promise<number> {
  const moved = await s.query(
    'INSERT quarantine',
    `INSERT INTO ${t.quarantine} (session_id, seq, type, time, data, checksum, reason, quarantined_at)
     SELECT session_id, seq, type, time, data, checksum, $3, $4 FROM ${t.events}
     WHERE session_id = $1 AND seq > $2 ORDER BY seq`,
    [sessionId, afterSeq, reason, now],
  );
  const deleted = await s.query(
    'DELETE events',
    `DELETE FROM ${t.events} WHERE session_id = $1 AND seq > $2`,
    [sessionId, afterSeq],
  );
  if (moved.rowCount !== deleted.rowCount)
    throw errors.corrupt(
      `session ${sessionId}: copied ${moved.rowCount} rows to quarantine but deleted ${deleted.rowCount}`,
      { table: 'events', row: `session_id=${sessionId}` },
      sessionId,
    );
  return deleted.rowCount ?? 0;
}

/** The interrupted tail after `committedSeq` to quarantine (reason `interrupted-tail`). */
export async function cutTail(
  s: Session,
  t: TableNames,
  schema: string,
  sessionId: string,
  committedSeq: number,
  now: string,
): Promise<RecoveryReport> {
  const cutEvents = await moveToQuarantine(s, t, sessionId, committedSeq, 'interrupted-tail', now);
  return { cutEvents, quarantinedAt: quarantineAddress(schema, sessionId) };
}

/** Checks one session's rows; the first damaged seq, if any, and what it was. */
function checkRows(
  sessionId: string,
  row: SessionRow,
  rows: readonly EventRow[],
  isBoundary: BoundaryPredicate,
): { health: SessionHealth; firstBad?: number } {
  const problems: MaintenanceProblem[] = [];
  const events: SessionEvent[] = [];
  let firstBad: number | undefined;
  try {
    for (let i = 0; i < rows.length; i++) events.push(decodeEventRow(sessionId, rows[i]!, i));
  } catch (error) {
    firstBad = events.length;
    problems.push(problemOf(sessionId, error, firstBad));
  }
  let eventCount: number | undefined;
  try {
    const summary = rowToSummary(row);
    eventCount = summary.eventCount;
    if (firstBad === undefined && summary.eventCount !== rows.length) {
      problems.push({
        kind: 'corrupt',
        sessionId,
        message: `session ${sessionId}: the summary counts ${summary.eventCount} events but the log holds ${rows.length}`,
        table: 'events',
        row: `session_id=${sessionId}`,
        seq: Math.min(summary.eventCount, rows.length),
      });
    }
  } catch (error) {
    problems.push(problemOf(sessionId, error));
  }
  const state = commitStateOf(events, isBoundary);
  const health: SessionHealth = {
    sessionId,
    status: problems.length > 0 ? 'corrupt' : state.interrupted ? 'interrupted' : 'ok',
    committedSeq: state.committedSeq,
    problems,
  };
  if (eventCount !== undefined) health.eventCount = eventCount;
  if (problems.length === 0 && state.interrupted)
    problems.push({
      kind: 'interrupted',
      sessionId,
      message: `session ${sessionId}: events after seq ${state.committedSeq} have no closing boundary`,
      seq: state.committedSeq + 1,
    });
  return firstBad === undefined ? { health } : { health, firstBad };
}

function problemOf(sessionId: string, error: unknown, seq?: number): MaintenanceProblem {
  const problem: MaintenanceProblem = {
    kind: isTidemarkError(error, 'CORRUPT') ? 'corrupt' : 'unreadable',
    sessionId,
    message: error instanceof Error ? error.message : String(error),
  };
  const location = isTidemarkError(error) ? error.location : undefined;
  if (location?.table !== undefined) problem.table = location.table;
  if (location?.row !== undefined) problem.row = location.row;
  const at = location?.seq ?? seq;
  if (at !== undefined) problem.seq = at;
  return problem;
}

/** The row and the events of a session, read in the caller's snapshot (verify: REPEATABLE READ). */
async function readSession(
  s: Session,
  t: TableNames,
  id: string,
): Promise<{ row?: SessionRow; rows: EventRow[] }> {
  const head = await s.query<SessionRow>(
    'SELECT sessions',
    `SELECT ${SESSION_COLUMNS} FROM ${t.sessions} WHERE id = $1`,
    [id],
  );
  const rows = await readEvents(s, t, id);
  return head.rows[0] === undefined ? { rows } : { row: head.rows[0], rows };
}

/** Every event row of a session, in seq order. */
function readEvents(s: Session, t: TableNames, id: string): Promise<EventRow[]> {
  return s.rows(
    'SELECT events',
    `SELECT ${EVENT_COLUMNS} FROM ${t.events} WHERE session_id = $1 ORDER BY seq`,
    [id],
  );
}

function orphanHealth(id: string, rows: number): SessionHealth {
  return {
    sessionId: id,
    status: 'corrupt',
    problems: [
      {
        kind: 'corrupt',
        sessionId: id,
        message: `session ${id}: ${rows} events have no sessions row (the row is damaged or was removed)`,
        table: 'sessions',
        row: `id=${id}`,
      },
    ],
  };
}

/**
 * Checks one session's rows read-only in one REPEATABLE READ snapshot: checksums, seq gaps,
 * counts, the summary row. Events without a sessions row are a corrupt session, not an absent
 * one. NOT_FOUND when `id` has neither a row nor events.
 */
export async function verifySession(
  db: Connections,
  t: TableNames,
  id: string,
  isBoundary: BoundaryPredicate,
): Promise<SessionHealth> {
  const { row, rows } = await db.transaction(
    db.context(`verifying session ${id}`, id),
    (s) => readSession(s, t, id),
    'BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY',
  );
  if (row === undefined && rows.length === 0) throw errors.notFound(id);
  return row === undefined ? orphanHealth(id, rows.length) : checkRows(id, row, rows, isBoundary).health;
}

/**
 * Checks every session, including ids that only have events left (which `list` cannot show).
 * A session deleted while this runs is skipped.
 */
export async function verifyAll(
  db: Connections,
  t: TableNames,
  isBoundary: BoundaryPredicate,
): Promise<VerifyReport> {
  const ids = await db.run(db.context('verifying sessions'), async (s) => {
    const found = await s.query<{ id: string }>(
      'SELECT sessions',
      `SELECT id FROM ${t.sessions} UNION SELECT DISTINCT session_id FROM ${t.events} ORDER BY 1`,
    );
    return found.rows.map((r) => r.id);
  });
  const report: VerifyReport = { checked: 0, sessions: [], problems: [] };
  for (const id of ids) {
    let health: SessionHealth;
    try {
      health = await verifySession(db, t, id, isBoundary);
    } catch (error) {
      if (isTidemarkError(error, 'NOT_FOUND')) continue;
      throw error;
    }
    report.checked++;
    report.sessions.push(health);
    report.problems.push(...health.problems);
  }
  return report;
}

/**
 * Repairs one session in one transaction: with `dropCorrupt`, the first damaged event and every
 * event after it go to quarantine (a log must stay contiguous); with `tail: 'cut'`, an interrupted
 * tail goes too. The summary is rebuilt from what is kept. A damaged sessions row is not guessed
 * at: CORRUPT, restore a backup.
 */
export async function repairSession(
  db: Connections,
  t: TableNames,
  schema: string,
  id: string,
  options: Required<RepairOptions>,
  isBoundary: BoundaryPredicate,
): Promise<RepairReport> {
  return db.transaction(db.context(`repairing session ${id}`, id), async (s) => {
    // Absence and a missing row are decided in one snapshot (snapshot.ts); with the row locked,
    // no writer changes the events read next.
    const row = await sessionRow(s, t, id, true);
    if (row === 'absent') throw errors.notFound(id);
    if (row === 'orphaned') {
      throw errors.corrupt(
        `session ${id}: its sessions row is missing; repair will not invent one (restore a backup)`,
        { table: 'sessions', row: `id=${id}` },
        id,
      );
    }
    const rows = await readEvents(s, t, id);
    const summary = rowToSummary(row); // CORRUPT for a damaged row: nothing to rebuild from
    const { health, firstBad } = checkRows(id, row, rows, isBoundary);
    const report: RepairReport = {
      sessionId: id,
      eventCount: rows.length,
      removed: [],
      quarantined: [],
    };
    const now = nowIso();
    const where = quarantineAddress(schema, id);
    let kept = rows.length;
    if (firstBad !== undefined && options.dropCorrupt) {
      report.corruptEvents = await moveToQuarantine(s, t, id, firstBad - 1, 'corrupt', now);
      report.removed.push(...health.problems.map((p) => ({ ...p, quarantinedAt: where })));
      kept = firstBad;
    }
    let events = rows.slice(0, kept).map((r, i) => decodeEventRow(id, r, i));
    let state = commitStateOf(events, isBoundary);
    if (options.tail === 'cut' && state.interrupted && firstBad === undefined) {
      report.cutEvents = await moveToQuarantine(s, t, id, state.committedSeq, 'interrupted-tail', now);
      report.removed.push({
        kind: 'interrupted',
        sessionId: id,
        message: `cut ${report.cutEvents} events after seq ${state.committedSeq}`,
        seq: state.committedSeq + 1,
        quarantinedAt: where,
      });
      events = events.slice(0, state.committedSeq + 1);
      state = commitStateOf(events, isBoundary);
    }
    if (report.removed.length > 0 || summary.eventCount !== events.length) {
      if (firstBad !== undefined && !options.dropCorrupt)
        return { ...report, eventCount: summary.eventCount };
      await s.query(
        'UPDATE sessions',
        `UPDATE ${t.sessions} SET next_seq = $2, committed_seq = $3, interrupted = $4 WHERE id = $1`,
        [id, events.length, state.committedSeq, state.interrupted],
      );
      report.quarantined = [where];
    }
    report.eventCount = events.length;
    return report;
  });
}
