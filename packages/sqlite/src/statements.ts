// The prepared statement set of one store connection.
import type Database from 'better-sqlite3';
import type { SessionRow } from './rows.js';

// The column order is sessionRowOf's (rows.ts), which decodes the raw rows of the list statements.
const SUMMARY_SELECT = `SELECT id, format_version, created_at, updated_at, cwd, parent_id, parent_seq, event_count,
  committed_seq, interrupted, title, first_prompt, tags, attrs FROM sessions`;

/**
 * Prepared once per connection: preparing is a large share of a short statement's cost.
 * Never prepare a PRAGMA that sets something here: SQLite applies such pragmas when it compiles
 * them, not when they run, so merely preparing `PRAGMA synchronous = NORMAL` would switch the
 * connection to NORMAL.
 */
export function prepareStatements(db: Database.Database): Statements {
  return {
    ...transactionStatements(db),
    ...sessionStatements(db),
    ...eventStatements(db),
    ...listStatements(db),
  };
}

type Statement<P extends unknown[] | object = unknown[], R = unknown> = Database.Statement<P, R>;

/** The statements of one store connection (named: declaration files cannot name the inferred types). */
export interface Statements {
  begin: Statement;
  beginImmediate: Statement;
  commit: Statement;
  rollback: Statement;
  savepoint: Statement;
  release: Statement;
  rollbackTo: Statement;
  getSession: Statement<[string], SessionRow>;
  hasSession: Statement<[string], number>;
  updatedAtOf: Statement<[string], unknown>;
  appendHead: Statement<[string]>;
  appendHeadAfter: Statement<[number, string]>;
  updateAfterAppend: Statement<[string, number, number, number, string | null, string]>;
  insertSession: Statement;
  updateSummary: Statement;
  deleteSession: Statement<[string]>;
  orphanEvents: Statement<[{ id: string }], number>;
  insertEvent: Statement<[string, number, string, string, string, number]>;
  eventRange: Statement<[string, number, number]>;
  crcAt: Statement<[string, number], unknown>;
  allEvents: Statement<[string]>;
  deleteEvents: Statement<[string]>;
  listAll: Statement;
  listAllAfter: Statement;
  listCwd: Statement;
  listCwdAfter: Statement;
}

function transactionStatements(db: Database.Database) {
  return {
    begin: db.prepare('BEGIN'),
    beginImmediate: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    // One name serves every batch of a group commit: a batch's savepoint is released or rolled
    // back before the next batch opens its own.
    savepoint: db.prepare('SAVEPOINT batch'),
    release: db.prepare('RELEASE batch'),
    rollbackTo: db.prepare('ROLLBACK TO batch'),
  };
}

function sessionStatements(db: Database.Database) {
  return {
    getSession: db.prepare<[string], SessionRow>(`${SUMMARY_SELECT} WHERE id = ?`),
    hasSession: db.prepare<[string], number>('SELECT 1 FROM sessions WHERE id = ?').pluck(),
    updatedAtOf: db.prepare<[string], unknown>('SELECT updated_at FROM sessions WHERE id = ?').pluck(),
    // The statements of every append bind by position: cheaper than looking up named parameters
    // in an object, on the hottest path of the store.
    appendHead: db
      .prepare<[string]>(
        `SELECT updated_at, event_count, committed_seq, interrupted, first_prompt,
           (SELECT max(seq) FROM events WHERE session_id = sessions.id) FROM sessions WHERE id = ?`,
      )
      .raw(),
    // The same, with the event an append names as `after` (its seq bound first): the head and that
    // event in one statement, on the path of every append an adapter plans on its cache.
    appendHeadAfter: db
      .prepare<[number, string]>(
        `SELECT s.updated_at, s.event_count, s.committed_seq, s.interrupted, s.first_prompt,
           (SELECT max(seq) FROM events WHERE session_id = s.id), e.seq, e.type, e.time, e.data, e.crc
         FROM sessions AS s LEFT JOIN events AS e ON e.session_id = s.id AND e.seq = ? WHERE s.id = ?`,
      )
      .raw(),
    updateAfterAppend: db.prepare<[string, number, number, number, string | null, string]>(
      `UPDATE sessions SET updated_at = ?, event_count = ?, committed_seq = ?, interrupted = ?, first_prompt = ?
       WHERE id = ?`,
    ),
    insertSession: db.prepare(
      `INSERT INTO sessions (id, format_version, created_at, updated_at, cwd, parent_id, parent_seq, event_count,
        committed_seq, interrupted, title, first_prompt, tags, attrs)
       VALUES (@id, @format_version, @created_at, @updated_at, @cwd, @parent_id, @parent_seq, @event_count,
        @committed_seq, @interrupted, @title, @first_prompt, @tags, @attrs)`,
    ),
    updateSummary: db.prepare(
      `UPDATE sessions SET updated_at = @updated_at, event_count = @event_count, committed_seq = @committed_seq,
        interrupted = @interrupted, title = @title, first_prompt = @first_prompt, tags = @tags, attrs = @attrs
       WHERE id = @id`,
    ),
    deleteSession: db.prepare<[string]>('DELETE FROM sessions WHERE id = ?'),
  };
}

function eventStatements(db: Database.Database) {
  return {
    // One statement, so one snapshot: never CORRUPT for a session another connection creates
    // between a caller's look at `sessions` and this one.
    orphanEvents: db
      .prepare<[{ id: string }], number>(
        'SELECT 1 FROM events WHERE session_id = @id AND NOT EXISTS (SELECT 1 FROM sessions WHERE id = @id) LIMIT 1',
      )
      .pluck(),
    insertEvent: db.prepare<[string, number, string, string, string, number]>(
      'INSERT INTO events (session_id, seq, type, time, data, crc) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    eventRange: db
      .prepare<[string, number, number]>(
        'SELECT seq, type, time, data, crc FROM events WHERE session_id = ? AND seq >= ? AND seq <= ? ORDER BY seq',
      )
      .raw(),
    crcAt: db
      .prepare<[string, number], unknown>('SELECT crc FROM events WHERE session_id = ? AND seq = ?')
      .pluck(),
    allEvents: db
      .prepare<[string]>('SELECT seq, type, time, data, crc FROM events WHERE session_id = ? ORDER BY seq')
      .raw(),
    deleteEvents: db.prepare<[string]>('DELETE FROM events WHERE session_id = ?'),
  };
}

function listStatements(db: Database.Database) {
  const listOrder = 'ORDER BY updated_at DESC, id ASC LIMIT @limit';
  // `updated_at <= @u` alone lets SQLite range-scan the index; the OR finishes the keyset test.
  const afterCursor = '(updated_at <= @updatedAt AND (updated_at < @updatedAt OR id > @id))';
  // Raw (array) rows, decoded by sessionRowOf: see there.
  return {
    listAll: db.prepare(`${SUMMARY_SELECT} INDEXED BY sessions_by_updated ${listOrder}`).raw(),
    listAllAfter: db
      .prepare(`${SUMMARY_SELECT} INDEXED BY sessions_by_updated WHERE ${afterCursor} ${listOrder}`)
      .raw(),
    listCwd: db.prepare(`${SUMMARY_SELECT} INDEXED BY sessions_by_cwd WHERE cwd = @cwd ${listOrder}`).raw(),
    listCwdAfter: db
      .prepare(
        `${SUMMARY_SELECT} INDEXED BY sessions_by_cwd WHERE cwd = @cwd AND ${afterCursor} ${listOrder}`,
      )
      .raw(),
  };
}
