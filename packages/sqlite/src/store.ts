// The SQLite backend: every operation is one short synchronous transaction on one better-sqlite3
// connection, run inside an async method (see README: "Sync driver, async store"). Nothing awaits
// inside a transaction, so two calls of one instance never interleave; other instances and
// processes are serialized by SQLite's own write lock (BEGIN IMMEDIATE).
//
// This class only sequences an operation: arguments checked, the reservations of created but not
// yet stored sessions, then one storage function (append.ts, read.ts, update-delete.ts) that does
// the work on the connection (connection.ts).
import { fsyncSync } from 'node:fs';
import {
  type AppendResult,
  applyPatch,
  assertValidId,
  type CreateInit,
  type DeleteOptions,
  emptySummary,
  errors,
  generateId,
  type ListQuery,
  type LoadedSession,
  type LoadOptions,
  prepareBatch,
  type ReadRange,
  type SessionEvent,
  type SessionMeta,
  type SessionPage,
  type SessionStore,
  type SessionSummary,
  type SummaryPatch,
  validateCreate,
  validateDeleteOptions,
  validateListQuery,
  validateLoadOptions,
  validatePatch,
  validateRange,
} from '@tidemark/core';
import type Database from 'better-sqlite3';
import { appendBatch, type Reservation } from './append.js';
import { SqliteConnection } from './connection.js';
import { openDatabase } from './open.js';
import { type SqliteStoreOptions, validateOptions } from './options.js';
import { hasSession, listPage, loadSession, readEvents, sessionRowExists } from './read.js';
import { SQLITE_SCHEMA_VERSION } from './schema.js';
import { deleteStored, updateStored } from './update-delete.js';

/**
 * File-system calls the store makes outside SQLite, replaceable through
 * {@link openSqliteStoreWith} so that tests can observe or fail them. @internal
 */
export interface StoreInternals {
  /** Syncs a descriptor (`fs.fsyncSync`); used by `close()` on the WAL in relaxed mode. */
  fsync: (fd: number) => void;
}

/** The connection behind each store, for tests that check per-connection settings. @internal */
export const connectionOf: WeakMap<SessionStore, Database.Database> = new WeakMap();

class SqliteStore implements SessionStore {
  /** Sessions created here and not yet stored: their first append writes the sessions row. */
  private readonly reservations = new Map<string, Reservation>();

  constructor(
    private readonly conn: SqliteConnection,
    private readonly options: SqliteStoreOptions,
  ) {}

  async create(init?: CreateInit): Promise<SessionMeta> {
    this.conn.assertOpen();
    const { meta, patch } = validateCreate(init, generateId);
    const context = this.conn.context(`creating session ${meta.id}`, meta.id, 'sessions');
    const exists = sessionRowExists(this.conn, context, meta.id);
    if (exists || this.reservations.has(meta.id)) throw errors.alreadyExists(meta.id);
    this.conn.assertAbsent(context, meta.id);
    this.reservations.set(meta.id, { meta, patch });
    return { ...structuredClone(meta), formatVersion: SQLITE_SCHEMA_VERSION };
  }

  async append(id: string, events: readonly SessionEvent[]): Promise<AppendResult> {
    this.conn.assertOpen();
    assertValidId(id);
    const batch = prepareBatch(events, this.options, id);
    const result = appendBatch(this.conn, id, batch, this.reservations.get(id));
    // Materialized now, by this instance or another: the reservation is moot either way.
    this.reservations.delete(id);
    return result;
  }

  async load(id: string, options?: LoadOptions): Promise<LoadedSession> {
    this.conn.assertOpen();
    assertValidId(id);
    return loadSession(this.conn, id, validateLoadOptions(options));
  }

  read(id: string, range?: ReadRange): AsyncIterable<SessionEvent> {
    const conn = this.conn;
    return {
      async *[Symbol.asyncIterator]() {
        // Checked on the first next(), like every failure of a stream.
        conn.assertOpen();
        assertValidId(id);
        const { fromSeq, toSeq } = validateRange(range);
        yield* readEvents(conn, id, fromSeq, toSeq);
      },
    };
  }

  async list(query?: ListQuery): Promise<SessionPage> {
    this.conn.assertOpen();
    return listPage(this.conn, validateListQuery(query));
  }

  async has(id: string): Promise<boolean> {
    this.conn.assertOpen();
    assertValidId(id);
    return hasSession(this.conn, id);
  }

  async update(id: string, patch: SummaryPatch): Promise<SessionSummary> {
    this.conn.assertOpen();
    assertValidId(id);
    const valid = validatePatch(patch);
    const stored = updateStored(this.conn, id, valid);
    if (stored !== undefined) return stored;
    const reservation = this.reservations.get(id);
    if (reservation === undefined) throw errors.notFound(id);
    const merged = { ...reservation.patch, ...valid };
    const summary = applyPatch(emptySummary(reservation.meta), merged, reservation.meta.createdAt);
    reservation.patch = merged;
    return summary;
  }

  async delete(id: string, options?: DeleteOptions): Promise<void> {
    this.conn.assertOpen();
    assertValidId(id);
    const outcome = deleteStored(this.conn, id, validateDeleteOptions(options));
    const wasReserved = this.reservations.delete(id);
    if (outcome === 'absent' && !wasReserved) throw errors.notFound(id);
  }

  async close(): Promise<void> {
    if (this.conn.closed) return;
    this.reservations.clear();
    this.conn.close();
  }
}

/**
 * Opens (creating if needed) a SQLite session store: WAL, `synchronous=FULL` (`NORMAL` when
 * `durability: 'relaxed'`), `foreign_keys=ON`, STRICT tables, schema migrated to
 * {@link SQLITE_SCHEMA_VERSION}.
 *
 * Rejects with a typed error when the database cannot be opened or read: IO (`SQLITE_CANTOPEN`,
 * `SQLITE_BUSY`, …), CORRUPT (`SQLITE_NOTADB`, `SQLITE_CORRUPT`) or UNSUPPORTED_FORMAT (a newer
 * schema). An unreadable database is never presented as an empty one.
 */
export async function openSqliteStore(options: SqliteStoreOptions): Promise<SessionStore> {
  return openSqliteStoreWith(options, { fsync: fsyncSync });
}

/**
 * {@link openSqliteStore} with the file-system calls of {@link StoreInternals} replaced: for tests
 * that observe or fail the WAL sync of `close()`. Not exported from the package. @internal
 */
export async function openSqliteStoreWith(
  options: SqliteStoreOptions,
  internals: StoreInternals,
): Promise<SessionStore> {
  const o = validateOptions(options);
  return openDatabase(o, (db) => {
    const store = new SqliteStore(new SqliteConnection(db, o.path, o, internals.fsync), o);
    connectionOf.set(store, db);
    return store;
  });
}
