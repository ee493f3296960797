// Opening a store: the pool (ours or the caller's), its error listener, the fsync check and the
// migration, before the first operation.
import { resolveStoreOptions } from '@tidemark/core';
import pg from 'pg';
import { Connections } from './db.js';
import { mapPgError } from './errors.js';
import {
  POSTGRES_OPTION_NAMES,
  type PostgresStoreOptions,
  passwordOf,
  resolvePostgresOptions,
} from './options.js';
import { migrate } from './schema.js';
import { PostgresStore } from './store.js';

/**
 * Opens a PostgreSQL session store: creates or migrates `schema` (default `tidemark`), sets
 * `synchronous_commit = on`, the timeouts on every connection, and warns through `onWarning` when
 * the server runs with `fsync = off`. Rejects with IO when the server cannot be reached (retryable
 * for connection faults), UNSUPPORTED_FORMAT for a newer or foreign schema.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  // The shared options are the base class's; checked here too (with unknown names) so that a bad
  // one never opens a pool.
  resolveStoreOptions(options, 'openPostgresStore', POSTGRES_OPTION_NAMES);
  const resolved = resolvePostgresOptions(options);
  const ownsPool = options.pool === undefined;
  const secrets = passwordOf(options.connectionString, options.pool);
  const pool =
    options.pool ?? new pg.Pool({ connectionString: options.connectionString, max: resolved.poolSize });
  const onPoolError = (error: Error) => {
    resolved.warn(
      `tidemark postgres: idle connection error: ${mapPgError(error, { what: 'pool', secrets }).message}`,
    );
  };
  pool.on('error', onPoolError);
  const db = new Connections(
    pool,
    {
      statementTimeoutMs: resolved.statementTimeoutMs,
      lockTimeoutMs: resolved.lockTimeoutMs,
      idleInTransactionTimeoutMs: resolved.idleInTransactionTimeoutMs,
    },
    secrets,
    options.beforeStatement,
    resolved.warn,
  );
  try {
    const fsync = await db.run(db.context('opening the store'), (s) =>
      s.query<{ fsync: string }>('SELECT sessions', 'SHOW fsync'),
    );
    if (fsync.rows[0]?.fsync !== 'on') {
      resolved.warn(
        'tidemark postgres: WARNING: the server runs with fsync = off. Commits are NOT durable: a crash of ' +
          'the server or its machine can lose acknowledged appends or corrupt the database. Turn fsync on.',
      );
    }
    await migrate(db, resolved.schema);
  } catch (error) {
    if (ownsPool) await pool.end().catch(() => undefined);
    else pool.off('error', onPoolError);
    throw error;
  }
  return new PostgresStore(db, ownsPool, resolved.schema, options);
}
