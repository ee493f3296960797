// Options of openPostgresStore: validation and defaults. Nothing here keeps the connection string
// or the password beyond what the pool needs; the list of secrets is only used to redact.
import { backendOptionNames, errors, type StoreOptions } from '@tidemark/core';
import type pg from 'pg';
import type { StatementHook } from './db.js';

/** Options of {@link openPostgresStore}. */
export interface PostgresStoreOptions extends StoreOptions {
  /** A libpq-style URL (`postgres://user:pass@host:5432/db`). Either this or `pool`. */
  connectionString?: string;
  /**
   * A pool of your own (pg 8). The store attaches an error listener to it and to every client it
   * checks out, applies its per-connection settings to each client once, and does not end the
   * pool on `close()`.
   */
  pool?: pg.Pool;
  /** Schema holding the tables (default `tidemark`); created on first open. */
  schema?: string;
  /** Size of the pool the store creates from `connectionString` (default 10). */
  poolSize?: number;
  /** `statement_timeout` of every connection, ms (default 30,000). */
  statementTimeoutMs?: number;
  /** `lock_timeout` of every connection, ms (default 10,000). */
  lockTimeoutMs?: number;
  /** `idle_in_transaction_session_timeout` of every connection, ms (default 60,000). */
  idleInTransactionTimeoutMs?: number;
  /** Where warnings go (`fsync = off` on the server, connection errors). Default `console.warn`. */
  onWarning?: (message: string) => void;
  /**
   * Testing and fault-injection hook (used by `@tidemark/faults`): awaited before every statement
   * the store sends and before each checkout (`connect`), with the step's name and the session
   * concerned. Whatever it throws takes the path a server error would (a `{ code: '08006' }`
   * object is reported exactly like a real connection failure). Leave unset in production.
   */
  beforeStatement?: StatementHook;
}

/** Every name {@link PostgresStoreOptions} adds to the shared options; any other is refused. */
export const POSTGRES_OPTION_NAMES = backendOptionNames<PostgresStoreOptions>({
  connectionString: true,
  pool: true,
  schema: true,
  poolSize: true,
  statementTimeoutMs: true,
  lockTimeoutMs: true,
  idleInTransactionTimeoutMs: true,
  onWarning: true,
  beforeStatement: true,
});

/** Options after validation and defaults. */
export interface ResolvedPostgresOptions {
  schema: string;
  poolSize: number;
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
  warn: (message: string) => void;
}

function timeout(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > 0x7fffffff)
    throw errors.invalid(`openPostgresStore: ${name} must be a non-negative integer of milliseconds`);
  return value;
}

/**
 * Validates the PostgreSQL-specific options; INVALID naming the option for anything wrong. The
 * options every backend shares (durability, boundaryTypes, limits) are core's `resolveStoreOptions`.
 */
export function resolvePostgresOptions(options: unknown): ResolvedPostgresOptions {
  if (typeof options !== 'object' || options === null)
    throw errors.invalid('openPostgresStore: options must be an object');
  const o = options as PostgresStoreOptions;
  const hasUrl = o.connectionString !== undefined;
  const hasPool = o.pool !== undefined;
  if (hasUrl === hasPool)
    throw errors.invalid('openPostgresStore: give exactly one of connectionString and pool');
  if (hasUrl && (typeof o.connectionString !== 'string' || o.connectionString === ''))
    throw errors.invalid('openPostgresStore: connectionString must be a non-empty string');
  if (hasPool && (typeof o.pool !== 'object' || o.pool === null || typeof o.pool.connect !== 'function'))
    throw errors.invalid('openPostgresStore: pool must be a pg Pool');
  const schema = o.schema ?? 'tidemark';
  if (
    typeof schema !== 'string' ||
    schema === '' ||
    Buffer.byteLength(schema) > 63 ||
    schema.includes('\u0000')
  )
    throw errors.invalid('openPostgresStore: schema must be a name of 1 to 63 bytes without NUL');
  if (
    o.poolSize !== undefined &&
    (typeof o.poolSize !== 'number' || !Number.isSafeInteger(o.poolSize) || o.poolSize < 1)
  )
    throw errors.invalid('openPostgresStore: poolSize must be a positive integer');
  if (o.onWarning !== undefined && typeof o.onWarning !== 'function')
    throw errors.invalid('openPostgresStore: onWarning must be a function');
  if (o.beforeStatement !== undefined && typeof o.beforeStatement !== 'function')
    throw errors.invalid('openPostgresStore: beforeStatement must be a function');
  return {
    schema,
    poolSize: o.poolSize ?? 10,
    statementTimeoutMs: timeout(o.statementTimeoutMs, 'statementTimeoutMs', 30_000),
    lockTimeoutMs: timeout(o.lockTimeoutMs, 'lockTimeoutMs', 10_000),
    idleInTransactionTimeoutMs: timeout(o.idleInTransactionTimeoutMs, 'idleInTransactionTimeoutMs', 60_000),
    warn: o.onWarning ?? ((message: string) => console.warn(message)),
  };
}

/** The password in a connection string, for redaction ('' when there is none). */
export function passwordOf(connectionString: string | undefined, pool: pg.Pool | undefined): string[] {
  const secrets: string[] = [];
  if (connectionString !== undefined) {
    try {
      const password = decodeURIComponent(new URL(connectionString).password);
      if (password !== '') secrets.push(password);
    } catch {
      // Not a URL (key=value form): the regex in redact() still masks URL-shaped text.
    }
  }
  const poolPassword = (pool as { options?: { password?: unknown } } | undefined)?.options?.password;
  if (typeof poolPassword === 'string' && poolPassword !== '') secrets.push(poolPassword);
  return secrets;
}
