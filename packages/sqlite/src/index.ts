/**
 * @packageDocumentation
 * The SQLite backend of tidemark (better-sqlite3 12): one database file, WAL, `synchronous=FULL`
 * by default, STRICT tables, `PRAGMA user_version` migrations, and a read-only `verify` for the CLI.
 */
export { isCorruptionCode, mapSqliteError, type SqliteErrorContext } from './errors.js';
export type { SqliteStorageStep, SqliteStoreOptions } from './options.js';
export { READ_PAGE_SIZE } from './read.js';
export {
  quarantineAddress,
  repairSqliteStore,
  type SqliteProblem,
  type SqliteProblemKind,
  type SqliteRepairOptions,
  type SqliteRepairReport,
  type SqliteVerifyReport,
  verifySqliteStore,
} from './recovery.js';
export { SQLITE_APPLICATION_ID, SQLITE_SCHEMA_VERSION } from './schema.js';
export { openSqliteStore } from './store.js';
