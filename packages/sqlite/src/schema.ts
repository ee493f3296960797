// The database schema and its migrations. Versions are kept in `PRAGMA user_version`; every
// migration runs inside one BEGIN IMMEDIATE transaction that re-reads the version first, so two
// processes opening a fresh file at once migrate it exactly once, and a crash mid-migration leaves
// the previous version intact.
import type Database from 'better-sqlite3';
import { planMigration, refuse, SQLITE_APPLICATION_ID, SQLITE_SCHEMA_VERSION } from './migration-plan.js';

export {
  type MigrationPlan,
  planMigration,
  SQLITE_APPLICATION_ID,
  SQLITE_SCHEMA_VERSION,
} from './migration-plan.js';

/**
 * DDL of each version step: `MIGRATIONS[n]` takes a database from version n to n + 1.
 *
 * - `sessions` holds meta and summary columns only, so `list` never touches event rows
 *   (langchain-ai/deepagents #4005: listing 1,505 threads took 59.6 s when metadata shared rows
 *   with state blobs, 0.04 s with an index). The list indexes match its ORDER BY exactly.
 * - `events` is keyed by (session_id, seq): a second writer of the same seq collides on the key.
 *   WITHOUT ROWID clusters a session's events in seq order (a load reads neighbouring pages, not
 *   rows scattered among other sessions' writes) and makes an append touch one b-tree, not two;
 *   large `data` spills to overflow pages as in any table. `sessions` is WITHOUT ROWID for the
 *   same one-b-tree reason.
 * - `events.crc` is a CRC-32 of type, time and data: SQLite checks its pages' structure but not the
 *   bytes inside a row, and a flipped byte in a JSON string would otherwise read back as a
 *   different, valid event.
 * - `quarantine` keeps rows that a repair or `tail: 'cut'` took out of a log; it has no foreign
 *   key, so quarantined rows outlive the session.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE sessions (
    id             TEXT    NOT NULL PRIMARY KEY,
    format_version INTEGER NOT NULL,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL,
    cwd            TEXT,
    parent_id      TEXT,
    parent_seq     INTEGER,
    event_count    INTEGER NOT NULL CHECK (event_count >= 0),
    committed_seq  INTEGER NOT NULL CHECK (committed_seq >= -1),
    interrupted    INTEGER NOT NULL CHECK (interrupted IN (0, 1)),
    title          TEXT,
    first_prompt   TEXT,
    tags           TEXT,
    attrs          TEXT
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX sessions_by_updated ON sessions (updated_at DESC, id ASC);
  CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at DESC, id ASC);
  CREATE TABLE events (
    session_id TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL CHECK (seq >= 0),
    type       TEXT    NOT NULL,
    time       TEXT    NOT NULL,
    data       TEXT    NOT NULL,
    crc        INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE quarantine (
    id             INTEGER PRIMARY KEY,
    session_id     TEXT    NOT NULL,
    seq            INTEGER,
    type           TEXT,
    time           TEXT,
    data           TEXT,
    crc            INTEGER,
    reason         TEXT    NOT NULL,
    quarantined_at TEXT    NOT NULL
  ) STRICT;
  CREATE INDEX quarantine_by_session ON quarantine (session_id, seq);
  `,
];

function headerOf(
  db: Database.Database,
  step: ((name: 'PRAGMA user_version') => void) | undefined,
): { userVersion: number; applicationId: number; schemaObjects: number } {
  step?.('PRAGMA user_version');
  const read = () => ({
    userVersion: db.pragma('user_version', { simple: true }) as number,
    applicationId: db.pragma('application_id', { simple: true }) as number,
    schemaObjects: db.prepare('SELECT count(*) FROM sqlite_master').pluck().get() as number,
  });
  if (db.inTransaction) return read();
  // One read transaction: another process migrating the file meanwhile must be seen before or
  // after its commit, never half (tables counted, header not yet), which would look foreign.
  db.exec('BEGIN');
  let header: ReturnType<typeof read>;
  try {
    header = read();
  } catch (error) {
    if (db.inTransaction) {
      try {
        db.exec('ROLLBACK');
      } catch {
        // The read's error says more.
      }
    }
    throw error;
  }
  db.exec('COMMIT');
  return header;
}

/**
 * Reads the version header and throws UNSUPPORTED_FORMAT for a newer or foreign database, before
 * anything is written: the caller runs it before `PRAGMA journal_mode = WAL`, which would rewrite
 * the file header of a database it then refuses. Lets driver errors through for the caller to map.
 */
export function refuseUnknown(
  db: Database.Database,
  file: string,
  step?: (name: 'PRAGMA user_version') => void,
): void {
  const head = headerOf(db, step);
  const plan = planMigration(head.userVersion, head.applicationId, SQLITE_SCHEMA_VERSION, head.schemaObjects);
  if (plan.kind !== 'current' && plan.kind !== 'migrate') refuse(plan, file);
}

/**
 * Brings the database up to {@link SQLITE_SCHEMA_VERSION}. Idempotent; safe against concurrent
 * openers. Throws UNSUPPORTED_FORMAT for a newer or foreign database, and lets driver errors
 * through for the caller to map.
 */
export function migrate(
  db: Database.Database,
  file: string,
  step?: (name: 'PRAGMA user_version' | 'BEGIN IMMEDIATE' | 'CREATE TABLE' | 'COMMIT' | 'ROLLBACK') => void,
): void {
  const head = headerOf(db, step);
  const first = planMigration(
    head.userVersion,
    head.applicationId,
    SQLITE_SCHEMA_VERSION,
    head.schemaObjects,
  );
  if (first.kind === 'current') return;
  if (first.kind !== 'migrate') refuse(first, file);
  step?.('BEGIN IMMEDIATE');
  db.exec('BEGIN IMMEDIATE');
  try {
    // Another process may have migrated between the first look and our write lock.
    const header = headerOf(db, step);
    const plan = planMigration(
      header.userVersion,
      header.applicationId,
      SQLITE_SCHEMA_VERSION,
      header.schemaObjects,
    );
    if (plan.kind === 'migrate') {
      for (let version = plan.from; version < plan.to; version++) {
        step?.('CREATE TABLE');
        db.exec(MIGRATIONS[version]!);
      }
      step?.('PRAGMA user_version');
      db.pragma(`user_version = ${plan.to}`);
      db.pragma(`application_id = ${SQLITE_APPLICATION_ID}`);
    } else if (plan.kind !== 'current') {
      refuse(plan, file);
    }
    step?.('COMMIT');
    db.exec('COMMIT');
  } catch (error) {
    if (db.inTransaction) {
      try {
        step?.('ROLLBACK');
        db.exec('ROLLBACK');
      } catch {
        // The original error says more; closing the connection discards the transaction.
      }
    }
    throw error;
  }
}
