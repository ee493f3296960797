/**
 * @packageDocumentation
 * The PostgreSQL backend of tidemark (pg 8): one store shared by many hosts. Events keyed by
 * (session_id, seq) with text data and a checksum, single writer through a conditional UPDATE of
 * `next_seq`, `synchronous_commit = on`, checked COMMITs, and typed errors for every SQLSTATE.
 */
export type { PostgresStep, StatementHook } from './db.js';
export {
  type CommitOutcome,
  commitOutcomeOf,
  isConnectionFault,
  isRetryableState,
  mapPgError,
  type PgErrorContext,
  redact,
  sqlstateOf,
} from './errors.js';
export { quarantineAddress } from './maintenance.js';
export { openPostgresStore } from './open.js';
export type { PostgresStoreOptions } from './options.js';
export { READ_PAGE_SIZE } from './read.js';
export { POSTGRES_APPLICATION, POSTGRES_SCHEMA_VERSION } from './schema.js';
export { PostgresStore } from './store.js';
