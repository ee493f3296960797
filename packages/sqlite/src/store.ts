// The SQLite backend: every operation is one short synchronous transaction on one better-sqlite3
// connection, run inside an async method (see README: "Sync driver, async store"). Nothing awaits
// inside a transaction, so two calls of one instance never interleave; other instances and
// processes are serialized by SQLite's own write lock (BEGIN IMMEDIATE). Appends to different
// sessions that arrive together share one transaction (group commit, group-commit.ts).
//
// The rules every backend shares (arguments, CLOSED, per-session order, reservations of created
// but not yet stored sessions) are SessionStoreBase's; this class only hands each storage hook to
// the module that does the work on the connection (append.ts, read.ts, update-delete.ts, verify.ts,
// repair.ts through connection.ts).
import { fsyncSync } from 'node:fs';
import {
  type AppendResult,
  type LoadedSession,
  type PreparedEvent,
  type RepairOptions,
  type RepairReport,
  type Reservation,
  resolveStoreOptions,
  type SessionEvent,
  type SessionHealth,
  type SessionPage,
  type SessionStore,
  SessionStoreBase,
  type SessionSummary,
  type SummaryPatch,
  type TailPolicy,
  type ValidListQuery,
  type VerifyReport,
} from '@tidemark/core';
import type Database from 'better-sqlite3';
import { SqliteConnection } from './connection.js';
import { AppendGroups } from './group-commit.js';
import { openDatabase } from './open.js';
import { SQLITE_OPTION_NAMES, type SqliteStoreOptions, validateOptions } from './options.js';
import { hasSession, listPage, loadSession, readEventPages, readEvents } from './read.js';
import { repairStoredSession } from './repair.js';
import { SQLITE_SCHEMA_VERSION } from './schema.js';
import { deleteStored, updateStored } from './update-delete.js';
import { verifyDatabase, verifySession } from './verify.js';

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

/**
 * A tidemark store in one SQLite database file. Open it with {@link openSqliteStore}. Besides the
 * contract it offers `verify()` (read-only: `PRAGMA integrity_check`, foreign keys, contiguous seqs,
 * checksums, JSON, summary rows and counts, interrupted turns) and `repair()` (row-level: the
 * interrupted tail with `tail: 'cut'`, a corrupt end with `dropCorrupt`, both kept in the
 * quarantine table). Damage to the file as a whole is reported under the session id
 * {@link WHOLE_DATABASE}.
 */
export class SqliteStore extends SessionStoreBase {
  protected readonly formatVersion = SQLITE_SCHEMA_VERSION;
  /** `append(…, { after })` is checked in the append's own write transaction (append.ts). */
  protected override readonly storageChecksAfter = true;
  private readonly conn: SqliteConnection;
  private readonly appends: AppendGroups;

  /** @internal Use {@link openSqliteStore}: `db` is an open, migrated connection to `options.path`. */
  constructor(options: SqliteStoreOptions, db: Database.Database, internals: StoreInternals) {
    super(options, 'openSqliteStore', SQLITE_OPTION_NAMES);
    this.conn = new SqliteConnection(
      db,
      options.path,
      this.settings,
      options.beforeStorageStep,
      internals.fsync,
    );
    this.appends = new AppendGroups(this.conn);
  }

  protected async storageHas(id: string): Promise<boolean> {
    // CORRUPT, not false, when only the session's events are stored: create then refuses too.
    return hasSession(this.conn, id);
  }

  protected async storageAppend(
    id: string,
    batch: readonly PreparedEvent[],
    reservation: Reservation | undefined,
    after?: PreparedEvent,
  ): Promise<AppendResult> {
    // Appends to different sessions issued together share one commit (group-commit.ts).
    return this.appends.append(id, batch, reservation, after);
  }

  protected async storageLoad(id: string, tail: TailPolicy): Promise<LoadedSession> {
    return loadSession(this.conn, id, tail);
  }

  /** Unused by `read()`, which takes {@link SqliteStore.storageReadPages}; the base requires it. */
  protected storageRead(id: string, fromSeq: number, toSeq: number): AsyncIterable<SessionEvent> {
    return readEvents(this.conn, id, fromSeq, toSeq, () => this.assertOpen());
  }

  /** Pages by seq, each one read transaction; with `last`, found by index (see `readEventPages`). */
  protected override storageReadPages(
    id: string,
    fromSeq: number,
    toSeq: number,
    last: number | undefined,
  ): AsyncIterable<readonly SessionEvent[]> {
    return readEventPages(this.conn, id, fromSeq, toSeq, () => this.assertOpen(), last);
  }

  protected async storageList(query: ValidListQuery): Promise<SessionPage> {
    return listPage(this.conn, query);
  }

  protected async storageUpdate(id: string, patch: SummaryPatch): Promise<SessionSummary | undefined> {
    return updateStored(this.conn, id, patch);
  }

  protected async storageDelete(id: string, ifUpdatedAt: string | undefined): Promise<'deleted' | 'absent'> {
    return deleteStored(this.conn, id, ifUpdatedAt);
  }

  protected async storageClose(): Promise<void> {
    this.conn.close();
  }

  protected async storageVerify(id: string): Promise<SessionHealth> {
    return verifySession(this.conn, id);
  }

  protected override async storageVerifyAll(): Promise<VerifyReport> {
    return verifyDatabase(this.conn);
  }

  protected async storageRepair(id: string, options: Required<RepairOptions>): Promise<RepairReport> {
    return repairStoredSession(this.conn, id, options);
  }
}

/**
 * Opens (creating if needed) a SQLite session store: WAL, `synchronous=FULL` (`NORMAL` when
 * `durability: 'relaxed'`), `foreign_keys=ON`, STRICT tables, schema migrated to
 * {@link SQLITE_SCHEMA_VERSION}.
 *
 * Rejects with a typed error when the database cannot be opened or read: INVALID for a bad option,
 * IO (`SQLITE_CANTOPEN`, `SQLITE_BUSY`, …), CORRUPT (`SQLITE_NOTADB`, `SQLITE_CORRUPT`) or
 * UNSUPPORTED_FORMAT (a newer schema). An unreadable database is never presented as an empty one.
 */
export async function openSqliteStore(options: SqliteStoreOptions): Promise<SqliteStore> {
  return openSqliteStoreWith(options, { fsync: fsyncSync });
}

/**
 * {@link openSqliteStore} with the file-system calls of {@link StoreInternals} replaced: for tests
 * that observe or fail the WAL sync of `close()`. Not exported from the package. @internal
 */
export async function openSqliteStoreWith(
  options: SqliteStoreOptions,
  internals: StoreInternals,
): Promise<SqliteStore> {
  // Unknown and shared options are refused before the file is touched (the store checks them again).
  resolveStoreOptions(options, 'openSqliteStore', SQLITE_OPTION_NAMES);
  const o = validateOptions(options);
  return openDatabase(o, (db) => {
    const store = new SqliteStore(o, db, internals);
    connectionOf.set(store, db);
    return store;
  });
}
