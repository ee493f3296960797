// Maps better-sqlite3 failures onto the error codes of contract §3. Pure: no I/O, so every branch is
// tested directly. The rule: a storage fault is an error, never absence and never loss — so no
// driver code is ever turned into NOT_FOUND here.
import {
  type ErrorLocation,
  errnoOf,
  errors,
  isRetryableCode,
  isTidemarkError,
  TidemarkError,
} from '@tidemark/core';

/** What the failing call was doing, for messages and CORRUPT locations. */
export interface SqliteErrorContext {
  /** The database file. */
  file: string;
  /** What was being done, e.g. `appending to session abc`. */
  what: string;
  /** Session concerned, when there is one. */
  sessionId?: string;
  /** Table being read or written, for the CORRUPT location. */
  table?: string;
  /** Row key being read or written, for the CORRUPT location. */
  row?: string;
}

/** The driver code of an error (`SQLITE_BUSY`, `SQLITE_IOERR_WRITE`, `ENOTDIR`), if any. */
export function sqliteCodeOf(error: unknown): string | undefined {
  return errnoOf(error);
}

/** True for the codes that mean the file is not a sound database: SQLITE_CORRUPT*, SQLITE_NOTADB. */
export function isCorruptionCode(code: string | undefined): boolean {
  return (
    code !== undefined &&
    (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT' || code.startsWith('SQLITE_CORRUPT_'))
  );
}

/** True for a UNIQUE or PRIMARY KEY collision: another writer stored the same key first. */
export function isUniqueViolation(code: string | undefined): boolean {
  return code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/**
 * Turns anything a better-sqlite3 call threw into a {@link TidemarkError}:
 * - a TidemarkError passes through unchanged;
 * - SQLITE_NOTADB and SQLITE_CORRUPT* become CORRUPT with the file (and table/row when known);
 * - everything else (CANTOPEN, READONLY, BUSY, LOCKED, FULL, IOERR*, PERM, AUTH, NOMEM, a closed
 *   connection, an errno from the file system) becomes IO with `errno` set to the driver code and
 *   `retryable` true where waiting can help (BUSY, LOCKED, FULL and their extended codes).
 *
 * UNIQUE collisions are not special here: only `append` knows that one means CONFLICT.
 */
export function mapSqliteError(error: unknown, context: SqliteErrorContext): TidemarkError {
  if (isTidemarkError(error)) return error;
  const code = sqliteCodeOf(error);
  const detail = error instanceof Error ? error.message : String(error);
  if (isCorruptionCode(code)) {
    const location: ErrorLocation = { file: context.file };
    if (code === 'SQLITE_NOTADB') location.offset = 0;
    if (context.table !== undefined) location.table = context.table;
    if (context.row !== undefined) location.row = context.row;
    return errors.corrupt(
      `${context.what}: the database ${context.file} is damaged (${code}: ${detail})`,
      location,
      context.sessionId,
      error,
    );
  }
  return new TidemarkError('IO', `${context.what}: ${code === undefined ? '' : `${code}: `}${detail}`, {
    cause: error,
    ...(code !== undefined && { errno: code }),
    ...(context.sessionId !== undefined && { sessionId: context.sessionId }),
    retryable: isRetryableCode(code),
  });
}

/**
 * The answer for a session whose `sessions` row is missing while `events` still holds its rows:
 * the row (or its key) is damaged, which is CORRUPT with the row's location, never absence.
 */
export function sessionRowDamaged(file: string, id: string): TidemarkError {
  return errors.corrupt(
    `session ${id}: table sessions of ${file} has no row id=${id}, but table events still holds its events, ` +
      'so the sessions row is damaged. Run `tidemark verify` (store.verify()) to locate the damage, then ' +
      '`tidemark repair` (store.repair()), which fixes it or says to restore a backup',
    { file, table: 'sessions', row: `id=${id}` },
    id,
  );
}

/**
 * The error an append reports: CONFLICT for a key collision (BEGIN IMMEDIATE serializes writers,
 * so a collision means a writer that bypassed the lock protocol stored the same seq first; the
 * transaction was rolled back whole), anything else unchanged.
 */
export function appendError(error: unknown, id: string): unknown {
  const cause = error instanceof TidemarkError ? error.cause : error;
  if (isUniqueViolation(sqliteCodeOf(cause))) {
    return new TidemarkError('CONFLICT', `session ${id}: another writer stored these seqs first`, {
      sessionId: id,
      cause,
    });
  }
  return error;
}
