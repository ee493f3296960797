// One store's connection and the rules every statement follows on it: the fault hook before each
// step, short transactions that are always ended, and driver errors mapped with their location.
// The operation modules (append, read, update-delete) run their statements through it.
import { resolve } from 'node:path';
import { type BoundaryPredicate, type ResolvedStoreOptions, toIoError } from '@tidemark/core';
import type Database from 'better-sqlite3';
import { mapSqliteError, type SqliteErrorContext, sessionRowDamaged } from './errors.js';
import type { SqliteStorageStep, StepHook } from './options.js';
import { prepareStatements, type Statements } from './statements.js';
import { syncWalFile, walToSyncOnClose } from './wal.js';

/** The open database of one store, its statements and the settings its operations need. */
export class SqliteConnection {
  readonly stmts: Statements;
  readonly isBoundary: BoundaryPredicate;
  /** `durability: 'relaxed'`: commits sync only at boundary batches. */
  readonly relaxed: boolean;
  private readonly hook: StepHook | undefined;
  /** The WAL file close() syncs (relaxed durability), as an absolute path. */
  private readonly walOnClose: string | undefined;

  constructor(
    readonly db: Database.Database,
    readonly file: string,
    settings: ResolvedStoreOptions,
    hook: StepHook | undefined,
    private readonly fsync: (fd: number) => void,
  ) {
    this.isBoundary = settings.isBoundary;
    this.stmts = prepareStatements(db);
    this.relaxed = settings.durability === 'relaxed';
    // Resolved now: SQLite opened the file relative to the working directory of this moment, and
    // a later chdir must not make close() sync some other file.
    this.walOnClose = walToSyncOnClose(file === ':memory:' ? file : resolve(file), settings.durability);
    this.hook = hook;
  }

  /** Calls the fault hook before a step; whatever it throws is that step's driver error. */
  step(name: SqliteStorageStep, id?: string): void {
    if (this.hook !== undefined) this.hook(name, id);
  }

  /**
   * Rolls back a transaction a failed ROLLBACK left open, so that no call reads, or commits on top
   * of, the uncommitted writes of a call that already failed.
   */
  settle(): void {
    if (this.db.inTransaction) {
      this.step('ROLLBACK');
      this.stmts.rollback.run();
    }
  }

  /** What a call is doing, for its error messages and CORRUPT locations. */
  context(what: string, sessionId?: string, table?: string): SqliteErrorContext {
    const context: SqliteErrorContext = { file: this.file, what };
    if (sessionId !== undefined) {
      context.sessionId = sessionId;
      context.row = table === 'events' ? `session_id=${sessionId}` : `id=${sessionId}`;
    }
    if (table !== undefined) context.table = table;
    return context;
  }

  /**
   * Runs `work` in one transaction. On any error the transaction is rolled back if SQLite has not
   * already done so itself (it does after some FULL, IOERR and BUSY failures), then the error is
   * mapped. Nothing in `work` may await.
   */
  transaction<T>(mode: 'read' | 'write', context: SqliteErrorContext, work: () => T): T {
    try {
      return this.transactionUnmapped(mode, context.sessionId, work);
    } catch (error) {
      throw mapSqliteError(error, context);
    }
  }

  /**
   * {@link transaction} leaving the error as it was thrown, for a caller that maps it once per
   * session concerned (a group commit).
   */
  transactionUnmapped<T>(mode: 'read' | 'write', id: string | undefined, work: () => T): T {
    // A failed ROLLBACK earlier may have left a transaction open; never nest into it.
    this.settle();
    this.step(mode === 'write' ? 'BEGIN IMMEDIATE' : 'BEGIN', id);
    (mode === 'write' ? this.stmts.beginImmediate : this.stmts.begin).run();
    try {
      const result = work();
      this.step('COMMIT', id);
      this.stmts.commit.run();
      return result;
    } catch (error) {
      if (this.db.inTransaction) {
        try {
          this.step('ROLLBACK', id);
          this.stmts.rollback.run();
        } catch {
          // The original error says more; the next call retries the rollback (settle).
        }
      }
      throw error;
    }
  }

  /** Runs one statement outside a transaction, mapping its errors. */
  run<T>(context: SqliteErrorContext, step: SqliteStorageStep, work: () => T): T {
    try {
      this.settle();
      this.step(step, context.sessionId);
      return work();
    } catch (error) {
      throw mapSqliteError(error, context);
    }
  }

  /**
   * For an id whose `sessions` row was not found: throws CORRUPT when `events` still holds rows for
   * it (a damaged row or key), so that damage is never answered as absence. Runs only on the
   * not-found path; inside a transaction the caller's snapshot is used, outside one use
   * {@link assertAbsent}.
   */
  assertNoOrphanEvents(id: string): void {
    this.step('SELECT events', id);
    if (this.stmts.orphanEvents.get({ id }) !== undefined) throw sessionRowDamaged(this.file, id);
  }

  /** {@link assertNoOrphanEvents} as its own statement, outside a transaction. */
  assertAbsent(context: SqliteErrorContext, id: string): void {
    try {
      this.settle();
      this.assertNoOrphanEvents(id);
    } catch (error) {
      throw mapSqliteError(error, context);
    }
  }

  /**
   * Runs `work` (which writes) with `synchronous=FULL` when the store is relaxed, so that its
   * commit, and every relaxed commit before it, is durable when it returns; then back to NORMAL.
   */
  durably<T>(context: SqliteErrorContext, work: () => T): T {
    if (!this.relaxed) return work();
    const id = context.sessionId;
    this.run(context, 'PRAGMA synchronous', () => this.db.pragma('synchronous = FULL'));
    try {
      return work();
    } finally {
      this.restoreRelaxedSync(id);
    }
  }

  /** Back to synchronous=NORMAL after {@link durably}. Its failure is harmless. */
  private restoreRelaxedSync(id: string | undefined): void {
    try {
      // Outside any transaction: the pragma is refused inside one.
      this.settle();
      this.step('PRAGMA synchronous', id);
      this.db.pragma('synchronous = NORMAL');
    } catch {
      // Staying at FULL is only slower, never less safe.
    }
  }

  /**
   * Closes the connection (the store calls it once). Relaxed commits since the last boundary batch are
   * in the WAL, unsynced. Closing the last connection would checkpoint and sync them, but another
   * connection (a second instance, another process, a CLI) may keep the database open: the WAL is
   * synced here, so the loss window of `durability: 'relaxed'` ends at close() either way.
   */
  close(): void {
    let syncError: unknown;
    const wal = this.walOnClose;
    if (wal !== undefined) {
      try {
        syncWalFile(wal, this.fsync);
      } catch (error) {
        syncError = error;
      }
    }
    try {
      this.db.close();
    } catch (error) {
      throw mapSqliteError(error, this.context('closing the database'));
    }
    // After closing the connection, so that a failed sync leaks no handle; the store is closed.
    if (syncError !== undefined) throw toIoError(syncError, `closing ${this.file}`);
  }
}
