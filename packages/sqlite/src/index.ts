/**
 * @packageDocumentation
 * The SQLite backend of tidemark (better-sqlite3 12): one database file, WAL, `synchronous=FULL`
 * by default, STRICT tables, `PRAGMA user_version` migrations, and core's maintenance interface
 * (`store.verify()`, `store.repair()`) over the rows and pages of the file.
 */
export { isCorruptionCode, mapSqliteError, type SqliteErrorContext } from './errors.js';
export type { SqliteStorageStep, SqliteStoreOptions } from './options.js';
export { READ_PAGE_SIZE } from './read.js';
export { quarantineAddress } from './recovery.js';
export { SQLITE_APPLICATION_ID, SQLITE_SCHEMA_VERSION } from './schema.js';
export { openSqliteStore, SqliteStore } from './store.js';
export { WHOLE_DATABASE } from './verify.js';
