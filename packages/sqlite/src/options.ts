// The options of the SQLite backend and their validation at open.
import { backendOptionNames, errors, type StoreOptions } from '@tidemark/core';

/** Options of {@link openSqliteStore}. */
export interface SqliteStoreOptions extends StoreOptions {
  /** The database file; created (0600, parent directories 0700) when missing. */
  path: string;
  /**
   * How long a call waits for another connection's write lock before failing with a retryable IO
   * error (`SQLITE_BUSY`). Default 5000 ms.
   */
  busyTimeoutMs?: number;
  /**
   * Caps the database at this many pages (`PRAGMA max_page_count`, per connection). Writes past it
   * fail with a retryable IO error `SQLITE_FULL` and store nothing. Unlimited when omitted.
   */
  maxPageCount?: number;
  /**
   * Testing and fault-injection hook (used by `@tidemark/faults`): called before every statement
   * the store executes — each `BEGIN`/`BEGIN IMMEDIATE`, `SELECT`, `INSERT`, `UPDATE`, `DELETE`,
   * `COMMIT`, `ROLLBACK`, `SAVEPOINT`, `RELEASE`, `ROLLBACK TO` and pragma, and the steps of opening and migrating the database — with the
   * step's name (see {@link SqliteStorageStep}) and the session concerned, if any. Whatever it
   * throws takes the path a driver error would: the transaction is rolled back and the error is
   * mapped by `mapSqliteError`, so an object with `code: 'SQLITE_IOERR'` (`SQLITE_FULL`,
   * `SQLITE_BUSY`, `SQLITE_CORRUPT`, …) is reported exactly like a real `SqliteError` of that code.
   * The step does not run. Leave unset in production: then it costs one `undefined` check per step.
   */
  beforeStorageStep?: (step: SqliteStorageStep, id?: string) => void;
}

/** Every name {@link SqliteStoreOptions} adds to the shared options; any other is refused. */
export const SQLITE_OPTION_NAMES = backendOptionNames<SqliteStoreOptions>({
  path: true,
  busyTimeoutMs: true,
  maxPageCount: true,
  beforeStorageStep: true,
});

/** The steps {@link SqliteStoreOptions.beforeStorageStep} is called before. */
export type SqliteStorageStep =
  | 'open'
  | 'PRAGMA journal_mode'
  | 'PRAGMA synchronous'
  | 'PRAGMA foreign_keys'
  | 'PRAGMA max_page_count'
  | 'PRAGMA user_version'
  | 'PRAGMA integrity_check'
  | 'PRAGMA foreign_key_check'
  | 'BEGIN'
  | 'BEGIN IMMEDIATE'
  | 'COMMIT'
  | 'ROLLBACK'
  | 'SAVEPOINT'
  | 'RELEASE'
  | 'ROLLBACK TO'
  | 'CREATE TABLE'
  | 'SELECT sessions'
  | 'INSERT sessions'
  | 'UPDATE sessions'
  | 'DELETE sessions'
  | 'SELECT events'
  | 'INSERT events'
  | 'DELETE events'
  | 'INSERT quarantine';

/** The hook of {@link SqliteStoreOptions.beforeStorageStep}. */
export type StepHook = (step: SqliteStorageStep, id?: string) => void;

/**
 * Checks the options only SQLite has (path, busyTimeoutMs, maxPageCount, beforeStorageStep),
 * throwing INVALID naming the first bad one. The shared options are core's (`resolveStoreOptions`).
 */
export function validateOptions(options: unknown): SqliteStoreOptions {
  if (typeof options !== 'object' || options === null)
    throw errors.invalid('openSqliteStore: options must be an object');
  const o = options as SqliteStoreOptions;
  if (typeof o.path !== 'string' || o.path === '')
    throw errors.invalid('openSqliteStore: path must be a non-empty string');
  if (
    o.busyTimeoutMs !== undefined &&
    (!Number.isSafeInteger(o.busyTimeoutMs) || o.busyTimeoutMs < 0 || o.busyTimeoutMs > 0x7fffffff)
  ) {
    throw errors.invalid('openSqliteStore: busyTimeoutMs must be a non-negative integer');
  }
  if (o.maxPageCount !== undefined && (!Number.isSafeInteger(o.maxPageCount) || o.maxPageCount < 1)) {
    throw errors.invalid('openSqliteStore: maxPageCount must be a positive integer');
  }
  if (o.beforeStorageStep !== undefined && typeof o.beforeStorageStep !== 'function')
    throw errors.invalid('openSqliteStore: beforeStorageStep must be a function');
  return o;
}
