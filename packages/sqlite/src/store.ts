// The SQLite backend: every operation is one short synchronous transaction on one better-sqlite3
// connection, run inside an async method (see README: "Sync driver, async store"). Nothing awaits
// inside a transaction, so two calls of one instance never interleave; other instances and
// processes are serialized by SQLite's own write lock (BEGIN IMMEDIATE).
import { closeSync, constants, fsyncSync, lstatSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import {
  type AppendResult,
  applyPatch,
  assertSameEvents,
  assertValidId,
  type BoundaryPredicate,
  boundaryPredicate,
  type CreateInit,
  commitStateOf,
  type DeleteOptions,
  deleteConflict,
  emptySummary,
  encodeCursor,
  errors,
  generateId,
  isENOENT,
  type ListProblem,
  type ListQuery,
  type LoadedSession,
  type LoadOptions,
  loadedSession,
  nextUpdatedAt,
  nowIso,
  planAppend,
  prepareBatch,
  type ReadRange,
  type SessionEvent,
  type SessionMeta,
  type SessionPage,
  type SessionStore,
  type SessionSummary,
  type StoreOptions,
  type SummaryPatch,
  summaryAfterAppend,
  TidemarkError,
  toIoError,
  validateCreate,
  validateDeleteOptions,
  validateListQuery,
  validateLoadOptions,
  validatePatch,
  validateRange,
} from '@tidemark/core';
import Database from 'better-sqlite3';
import { isUniqueViolation, mapSqliteError, type SqliteErrorContext, sqliteCodeOf } from './errors.js';
import { cutTail } from './recovery.js';
import {
  type AppendHeadRow,
  dataJsonOf,
  decodeAppendHead,
  decodeEventRows,
  type EventRow,
  eventChecksum,
  eventRowKey,
  rowToMeta,
  rowToSummary,
  type SessionRow,
  summaryColumns,
} from './rows.js';
import { migrate, refuseUnknown, SQLITE_SCHEMA_VERSION } from './schema.js';
import { syncWalFile, walToSyncOnClose } from './wal.js';

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
   * `COMMIT`, `ROLLBACK` and pragma, and the steps of opening and migrating the database — with the
   * step's name (see {@link SqliteStorageStep}) and the session concerned, if any. Whatever it
   * throws takes the path a driver error would: the transaction is rolled back and the error is
   * mapped by `mapSqliteError`, so an object with `code: 'SQLITE_IOERR'` (`SQLITE_FULL`,
   * `SQLITE_BUSY`, `SQLITE_CORRUPT`, …) is reported exactly like a real `SqliteError` of that code.
   * The step does not run. Leave unset in production: then it costs one `undefined` check per step.
   */
  beforeStorageStep?: (step: SqliteStorageStep, id?: string) => void;
}

/** The steps {@link SqliteStoreOptions.beforeStorageStep} is called before. */
export type SqliteStorageStep =
  | 'open'
  | 'PRAGMA journal_mode'
  | 'PRAGMA synchronous'
  | 'PRAGMA foreign_keys'
  | 'PRAGMA max_page_count'
  | 'PRAGMA user_version'
  | 'BEGIN'
  | 'BEGIN IMMEDIATE'
  | 'COMMIT'
  | 'ROLLBACK'
  | 'CREATE TABLE'
  | 'SELECT sessions'
  | 'INSERT sessions'
  | 'UPDATE sessions'
  | 'DELETE sessions'
  | 'SELECT events'
  | 'INSERT events'
  | 'DELETE events'
  | 'INSERT quarantine';

type StepHook = (step: SqliteStorageStep, id?: string) => void;

/** Events fetched per query by `read()`: bounds its memory and keeps each query short. */
export const READ_PAGE_SIZE = 1000;

/** Where a `read` stream stands: the log it reads (its `created_at`) and the last event it yielded. */
interface ReadPosition {
  createdAt: string;
  lastSeq: number;
  lastCrc: unknown;
}

/** One page of `read`; `done` when no page follows. */
interface ReadPage {
  events: SessionEvent[];
  done: boolean;
  createdAt: string;
  lastCrc: unknown;
}

interface Pending {
  meta: Omit<SessionMeta, 'formatVersion'>;
  patch: SummaryPatch;
}

const SUMMARY_SELECT = `SELECT id, format_version, created_at, updated_at, cwd, parent_id, parent_seq, event_count,
  committed_seq, interrupted, title, first_prompt, tags, attrs FROM sessions`;

/**
 * Prepared once per connection: preparing is a large share of a short statement's cost.
 * Never prepare a PRAGMA that sets something here: SQLite applies such pragmas when it compiles
 * them, not when they run, so merely preparing `PRAGMA synchronous = NORMAL` would switch the
 * connection to NORMAL.
 */
function prepareStatements(db: Database.Database) {
  const listOrder = 'ORDER BY updated_at DESC, id ASC LIMIT @limit';
  // `updated_at <= @u` alone lets SQLite range-scan the index; the OR finishes the keyset test.
  const afterCursor = '(updated_at <= @updatedAt AND (updated_at < @updatedAt OR id > @id))';
  return {
    begin: db.prepare('BEGIN'),
    beginImmediate: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    getSession: db.prepare<[string], SessionRow>(`${SUMMARY_SELECT} WHERE id = ?`),
    hasSession: db.prepare<[string], number>('SELECT 1 FROM sessions WHERE id = ?').pluck(),
    // One statement, so one snapshot: never CORRUPT for a session another connection creates
    // between a caller's look at `sessions` and this one.
    orphanEvents: db
      .prepare<[{ id: string }], number>(
        'SELECT 1 FROM events WHERE session_id = @id AND NOT EXISTS (SELECT 1 FROM sessions WHERE id = @id) LIMIT 1',
      )
      .pluck(),
    updatedAtOf: db.prepare<[string], unknown>('SELECT updated_at FROM sessions WHERE id = ?').pluck(),
    appendHead: db
      .prepare<[{ id: string }]>(
        `SELECT updated_at, event_count, committed_seq, interrupted, first_prompt,
           (SELECT max(seq) FROM events WHERE session_id = @id) FROM sessions WHERE id = @id`,
      )
      .raw(),
    updateAfterAppend: db.prepare(
      `UPDATE sessions SET updated_at = @updated_at, event_count = @event_count, committed_seq = @committed_seq,
        interrupted = @interrupted, first_prompt = @first_prompt WHERE id = @id`,
    ),
    insertSession: db.prepare(
      `INSERT INTO sessions (id, format_version, created_at, updated_at, cwd, parent_id, parent_seq, event_count,
        committed_seq, interrupted, title, first_prompt, tags, attrs)
       VALUES (@id, @format_version, @created_at, @updated_at, @cwd, @parent_id, @parent_seq, @event_count,
        @committed_seq, @interrupted, @title, @first_prompt, @tags, @attrs)`,
    ),
    updateSummary: db.prepare(
      `UPDATE sessions SET updated_at = @updated_at, event_count = @event_count, committed_seq = @committed_seq,
        interrupted = @interrupted, title = @title, first_prompt = @first_prompt, tags = @tags, attrs = @attrs
       WHERE id = @id`,
    ),
    insertEvent: db.prepare<[string, number, string, string, string, number]>(
      'INSERT INTO events (session_id, seq, type, time, data, crc) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    eventRange: db
      .prepare<[string, number, number]>(
        'SELECT seq, type, time, data, crc FROM events WHERE session_id = ? AND seq >= ? AND seq <= ? ORDER BY seq',
      )
      .raw(),
    crcAt: db
      .prepare<[string, number], unknown>('SELECT crc FROM events WHERE session_id = ? AND seq = ?')
      .pluck(),
    allEvents: db
      .prepare<[string]>('SELECT seq, type, time, data, crc FROM events WHERE session_id = ? ORDER BY seq')
      .raw(),
    deleteEvents: db.prepare<[string]>('DELETE FROM events WHERE session_id = ?'),
    deleteSession: db.prepare<[string]>('DELETE FROM sessions WHERE id = ?'),
    listAll: db.prepare(`${SUMMARY_SELECT} INDEXED BY sessions_by_updated ${listOrder}`),
    listAllAfter: db.prepare(
      `${SUMMARY_SELECT} INDEXED BY sessions_by_updated WHERE ${afterCursor} ${listOrder}`,
    ),
    listCwd: db.prepare(`${SUMMARY_SELECT} INDEXED BY sessions_by_cwd WHERE cwd = @cwd ${listOrder}`),
    listCwdAfter: db.prepare(
      `${SUMMARY_SELECT} INDEXED BY sessions_by_cwd WHERE cwd = @cwd AND ${afterCursor} ${listOrder}`,
    ),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

/**
 * The answer for a session whose `sessions` row is missing while `events` still holds its rows:
 * the row (or its key) is damaged, which is CORRUPT with the row's location, never absence.
 */
function sessionRowDamaged(file: string, id: string): TidemarkError {
  return errors.corrupt(
    `session ${id}: table sessions of ${file} has no row id=${id}, but table events still holds its events, ` +
      'so the sessions row is damaged. Run `tidemark verify` (verifySqliteStore) to locate the damage, then ' +
      '`tidemark repair` (repairSqliteStore), which fixes it or says to restore a backup',
    { file, table: 'sessions', row: `id=${id}` },
    id,
  );
}

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
  private readonly pending = new Map<string, Pending>();
  private readonly isBoundary: BoundaryPredicate;
  private readonly stmts: Statements;
  private readonly relaxed: boolean;
  private readonly hook: StepHook | undefined;
  private closed = false;

  /** The WAL file close() syncs (relaxed durability), as an absolute path. */
  private readonly walOnClose: string | undefined;

  constructor(
    private readonly db: Database.Database,
    private readonly file: string,
    private readonly options: SqliteStoreOptions,
    private readonly internals: StoreInternals,
  ) {
    this.isBoundary = boundaryPredicate(options.boundaryTypes);
    this.stmts = prepareStatements(db);
    this.relaxed = options.durability === 'relaxed';
    // Resolved now: SQLite opened the file relative to the working directory of this moment, and
    // a later chdir must not make close() sync some other file.
    this.walOnClose = walToSyncOnClose(file === ':memory:' ? file : resolve(file), options.durability);
    this.hook = options.beforeStorageStep;
  }

  /** Calls the fault hook before a step; whatever it throws is that step's driver error. */
  private step(name: SqliteStorageStep, id?: string): void {
    if (this.hook !== undefined) this.hook(name, id);
  }

  /**
   * Rolls back a transaction a failed ROLLBACK left open, so that no call reads, or commits on top
   * of, the uncommitted writes of a call that already failed.
   */
  private settle(): void {
    if (this.db.inTransaction) {
      this.step('ROLLBACK');
      this.stmts.rollback.run();
    }
  }

  private assertOpen(): void {
    if (this.closed) throw errors.closed();
  }

  private context(what: string, sessionId?: string, table?: string): SqliteErrorContext {
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
  private transaction<T>(mode: 'read' | 'write', context: SqliteErrorContext, work: () => T): T {
    this.assertOpen();
    try {
      // A failed ROLLBACK earlier may have left a transaction open; never nest into it.
      this.settle();
      this.step(mode === 'write' ? 'BEGIN IMMEDIATE' : 'BEGIN', context.sessionId);
      (mode === 'write' ? this.stmts.beginImmediate : this.stmts.begin).run();
    } catch (error) {
      throw mapSqliteError(error, context);
    }
    try {
      const result = work();
      this.step('COMMIT', context.sessionId);
      this.stmts.commit.run();
      return result;
    } catch (error) {
      if (this.db.inTransaction) {
        try {
          this.step('ROLLBACK', context.sessionId);
          this.stmts.rollback.run();
        } catch {
          // The original error says more; the next call retries the rollback (settle).
        }
      }
      throw mapSqliteError(error, context);
    }
  }

  /**
   * For an id whose `sessions` row was not found: throws CORRUPT when `events` still holds rows for
   * it (a damaged row or key), so that damage is never answered as absence. Runs only on the
   * not-found path; inside a transaction the caller's snapshot is used, outside one use
   * {@link assertAbsent}.
   */
  private assertNoOrphanEvents(id: string): void {
    this.step('SELECT events', id);
    if (this.stmts.orphanEvents.get({ id }) !== undefined) throw sessionRowDamaged(this.file, id);
  }

  /** {@link assertNoOrphanEvents} as its own statement, outside a transaction. */
  private assertAbsent(context: SqliteErrorContext, id: string): void {
    this.assertOpen();
    try {
      this.settle();
      this.assertNoOrphanEvents(id);
    } catch (error) {
      throw mapSqliteError(error, context);
    }
  }

  /** Runs one statement outside a transaction, mapping its errors. */
  private run<T>(context: SqliteErrorContext, step: SqliteStorageStep, work: () => T): T {
    this.assertOpen();
    try {
      this.settle();
      this.step(step, context.sessionId);
      return work();
    } catch (error) {
      throw mapSqliteError(error, context);
    }
  }

  async create(init?: CreateInit): Promise<SessionMeta> {
    this.assertOpen();
    const { meta, patch } = validateCreate(init, generateId);
    const context = this.context(`creating session ${meta.id}`, meta.id, 'sessions');
    const exists = this.run(context, 'SELECT sessions', () => this.stmts.hasSession.get(meta.id));
    if (exists !== undefined || this.pending.has(meta.id)) throw errors.alreadyExists(meta.id);
    this.assertAbsent(context, meta.id);
    this.pending.set(meta.id, { meta, patch });
    return { ...structuredClone(meta), formatVersion: SQLITE_SCHEMA_VERSION };
  }

  async append(id: string, events: readonly SessionEvent[]): Promise<AppendResult> {
    this.assertOpen();
    assertValidId(id);
    const batch = prepareBatch(events, this.options, id);
    const context = this.context(`appending to session ${id}`, id, 'events');
    // Relaxed durability defers syncs to boundary events: a batch that closes a unit of work
    // commits with synchronous=FULL, whose WAL fsync also makes every earlier commit durable.
    const syncNow = this.relaxed && batch.some((item) => this.isBoundary(item.event));
    let result: AppendResult;
    try {
      if (syncNow) this.run(context, 'PRAGMA synchronous', () => this.db.pragma('synchronous = FULL'));
      result = this.transaction('write', context, () => {
        // One query for the summary fields an append changes and the last stored seq.
        this.step('SELECT sessions', id);
        const row = this.stmts.appendHead.get({ id }) as AppendHeadRow | undefined;
        const pending = this.pending.get(id);
        if (row === undefined) {
          // Also with a reservation: its first batch would otherwise collide with the orphaned rows.
          this.assertNoOrphanEvents(id);
          if (pending === undefined) throw errors.notFound(id);
        }
        let nextSeq = 0;
        let summary: SessionSummary | undefined;
        if (row !== undefined) ({ nextSeq, summary } = decodeAppendHead(id, row, this.file));
        const plan = planAppend(id, nextSeq, batch);
        if (plan.kind === 'compare') {
          this.step('SELECT events', id);
          const stored = decodeEventRows(
            id,
            this.stmts.eventRange.all(id, plan.fromSeq, plan.toSeq) as EventRow[],
            plan.fromSeq,
            this.file,
          );
          assertSameEvents(id, stored, batch);
          return { nextSeq };
        }
        const now = nowIso();
        const appended = batch.map((item) => item.event);
        if (summary === undefined) {
          const { meta, patch } = pending!;
          const next = summaryAfterAppend(
            applyPatch(emptySummary(meta), patch, now),
            appended,
            this.isBoundary,
            now,
          );
          this.step('INSERT sessions', id);
          this.stmts.insertSession.run({
            id,
            format_version: SQLITE_SCHEMA_VERSION,
            created_at: meta.createdAt,
            cwd: meta.cwd ?? null,
            parent_id: meta.parent?.id ?? null,
            parent_seq: meta.parent?.seq ?? null,
            ...summaryColumns(next),
          });
        } else {
          const next = summaryAfterAppend(
            summary,
            appended,
            this.isBoundary,
            nextUpdatedAt(summary.updatedAt, now),
          );
          this.step('UPDATE sessions', id);
          this.stmts.updateAfterAppend.run({
            id,
            updated_at: next.updatedAt,
            event_count: next.eventCount,
            committed_seq: next.committedSeq,
            interrupted: next.interrupted ? 1 : 0,
            first_prompt: next.firstPrompt ?? null,
          });
        }
        for (const item of batch) {
          const { seq, type, time } = item.event;
          const data = dataJsonOf(item);
          this.step('INSERT events', id);
          this.stmts.insertEvent.run(id, seq, type, time, data, eventChecksum(type, time, data));
        }
        return { nextSeq: nextSeq + batch.length };
      });
    } catch (error) {
      // BEGIN IMMEDIATE serializes writers, so a key collision means a writer that bypassed the
      // lock protocol stored the same seq first; the transaction was rolled back whole.
      const cause = error instanceof TidemarkError ? error.cause : error;
      if (isUniqueViolation(sqliteCodeOf(cause))) {
        throw new TidemarkError('CONFLICT', `session ${id}: another writer stored these seqs first`, {
          sessionId: id,
          cause,
        });
      }
      throw error;
    } finally {
      if (syncNow && !this.closed) {
        try {
          // Outside any transaction: the pragma is refused inside one. Its failure is harmless.
          this.settle();
          this.step('PRAGMA synchronous', id);
          this.db.pragma('synchronous = NORMAL');
        } catch {
          // Staying at FULL is only slower, never less safe.
        }
      }
    }
    // Materialized now, by this instance or another: the reservation is moot either way.
    this.pending.delete(id);
    return result;
  }

  async load(id: string, options?: LoadOptions): Promise<LoadedSession> {
    this.assertOpen();
    assertValidId(id);
    const tail = validateLoadOptions(options);
    const context = this.context(`loading session ${id}`, id, 'events');
    return this.transaction(tail === 'cut' ? 'write' : 'read', context, () => {
      this.step('SELECT sessions', id);
      const row = this.stmts.getSession.get(id);
      if (row === undefined) {
        this.assertNoOrphanEvents(id);
        throw errors.notFound(id);
      }
      let summary = rowToSummary(row, this.file);
      const meta = rowToMeta(row, this.file);
      if (meta.formatVersion > SQLITE_SCHEMA_VERSION)
        throw errors.unsupportedFormat(meta.formatVersion, SQLITE_SCHEMA_VERSION, id);
      this.step('SELECT events', id);
      let events = decodeEventRows(id, this.stmts.allEvents.all(id) as EventRow[], 0, this.file);
      if (events.length !== summary.eventCount) {
        throw errors.corrupt(
          `session ${id}: the summary counts ${summary.eventCount} events but the log holds ${events.length} in ${this.file}`,
          {
            file: this.file,
            table: 'events',
            row: `session_id=${id}`,
            seq: Math.min(events.length, summary.eventCount),
          },
          id,
        );
      }
      let state = commitStateOf(events, this.isBoundary);
      let recovered: LoadedSession['recovered'];
      if (tail === 'cut' && state.interrupted) {
        const cut = cutTail(this.db, this.file, id, state.committedSeq, nowIso(), (name) =>
          this.step(name, id),
        );
        events = events.slice(0, state.committedSeq + 1);
        state = commitStateOf(events, this.isBoundary);
        summary = {
          ...summary,
          eventCount: events.length,
          committedSeq: state.committedSeq,
          interrupted: state.interrupted,
        };
        this.step('UPDATE sessions', id);
        this.stmts.updateSummary.run({ id, ...summaryColumns(summary) });
        recovered = { cutEvents: cut.cutEvents, quarantinedAt: cut.quarantinedAt };
      }
      return loadedSession(meta, summary, events, state, recovered);
    });
  }

  read(id: string, range?: ReadRange): AsyncIterable<SessionEvent> {
    const self = this;
    return {
      async *[Symbol.asyncIterator]() {
        self.assertOpen();
        assertValidId(id);
        const { fromSeq, toSeq } = validateRange(range);
        const context = self.context(`reading session ${id}`, id, 'events');
        let next = fromSeq;
        let seen: ReadPosition | undefined;
        // Paged by seq, each page one short read transaction: a consistent snapshot of the summary
        // row and the page, with no statement or transaction open across a yield (either would
        // hold the connection for every other call of this instance).
        for (;;) {
          const page = self.transaction('read', context, () => self.readPage(id, next, toSeq, seen));
          if (page === undefined) return; // the log was deleted or rewritten under this stream
          for (const event of page.events) yield event;
          if (page.done) return;
          next += page.events.length;
          seen = { createdAt: page.createdAt, lastSeq: next - 1, lastCrc: page.lastCrc };
        }
      },
    };
  }

  /**
   * One page of `read`, inside the caller's read transaction: events `next`.. (at most
   * {@link READ_PAGE_SIZE}, at most `toSeq`), checked against the summary row of the same snapshot.
   * `undefined` when the log this stream has been reading is gone: the sessions row is deleted, its
   * `created_at` changed (deleted and created again), or the last event yielded is missing or
   * different (a tail cut below the reader, maybe followed by new appends). Going on would splice
   * two logs into a history that never existed.
   */
  private readPage(
    id: string,
    next: number,
    toSeq: number,
    seen: ReadPosition | undefined,
  ): ReadPage | undefined {
    this.step('SELECT sessions', id);
    const row = this.stmts.getSession.get(id);
    if (row === undefined) {
      if (seen !== undefined) return undefined;
      this.assertNoOrphanEvents(id);
      throw errors.notFound(id);
    }
    const count = rowToSummary(row, this.file).eventCount;
    const createdAt = String(row.created_at);
    if (seen !== undefined) {
      if (createdAt !== seen.createdAt) return undefined;
      this.step('SELECT events', id);
      if (this.stmts.crcAt.get(id, seen.lastSeq) !== seen.lastCrc) return undefined;
    }
    const end = Math.min(toSeq, count - 1);
    let events: SessionEvent[] = [];
    let lastCrc: unknown;
    if (next <= end) {
      const last = Math.min(end, next + READ_PAGE_SIZE - 1);
      this.step('SELECT events', id);
      const rows = this.stmts.eventRange.all(id, next, last) as EventRow[];
      events = decodeEventRows(id, rows, next, this.file);
      if (events.length < last - next + 1) {
        // The summary of this same snapshot counts the row: it is missing, not deleted meanwhile.
        const missing = next + events.length;
        throw errors.corrupt(
          `session ${id}: seq ${missing} is missing from table events of ${this.file}`,
          { file: this.file, table: 'events', row: eventRowKey(id, missing), seq: missing },
          id,
        );
      }
      lastCrc = rows[rows.length - 1]![4];
    }
    const done = next + events.length > end;
    if (done && toSeq >= count) {
      // Past the counted events: a stored row there means the summary undercounts the log, which
      // load reports as CORRUPT; read must not stream a silently shortened history.
      this.step('SELECT events', id);
      if (this.stmts.crcAt.get(id, count) !== undefined) {
        throw errors.corrupt(
          `session ${id}: the summary counts ${count} events but the log holds seq ${count} in ${this.file}`,
          { file: this.file, table: 'events', row: `session_id=${id}`, seq: count },
          id,
        );
      }
    }
    return { events, done, createdAt, lastCrc };
  }

  async list(query?: ListQuery): Promise<SessionPage> {
    this.assertOpen();
    const q = validateListQuery(query);
    const params: Record<string, string | number> = { limit: q.limit + 1 };
    if (q.cwd !== undefined) params.cwd = q.cwd;
    if (q.cursor !== undefined) {
      params.updatedAt = q.cursor.updatedAt;
      params.id = q.cursor.id;
    }
    const statement =
      q.cwd === undefined
        ? q.cursor === undefined
          ? this.stmts.listAll
          : this.stmts.listAllAfter
        : q.cursor === undefined
          ? this.stmts.listCwd
          : this.stmts.listCwdAfter;
    const rows = this.run(
      this.context('listing sessions', undefined, 'sessions'),
      'SELECT sessions',
      () => statement.all(params) as SessionRow[],
    );
    const sessions: SessionSummary[] = [];
    const problems: ListProblem[] = [];
    for (const row of rows.slice(0, q.limit)) {
      try {
        sessions.push(rowToSummary(row, this.file));
      } catch (error) {
        problems.push({
          id: String(row.id),
          error: mapSqliteError(error, this.context('listing sessions', String(row.id))),
        });
      }
    }
    const page: SessionPage = { sessions, problems };
    if (rows.length > q.limit) {
      const last = rows[q.limit - 1]!;
      page.nextCursor = encodeCursor({ updatedAt: String(last.updated_at), id: String(last.id) });
    }
    return page;
  }

  async has(id: string): Promise<boolean> {
    this.assertOpen();
    assertValidId(id);
    const context = this.context(`looking up session ${id}`, id, 'sessions');
    if (this.run(context, 'SELECT sessions', () => this.stmts.hasSession.get(id)) !== undefined) return true;
    this.assertAbsent(context, id);
    return false;
  }

  async update(id: string, patch: SummaryPatch): Promise<SessionSummary> {
    this.assertOpen();
    assertValidId(id);
    const valid = validatePatch(patch);
    const stored = this.transaction('write', this.context(`updating session ${id}`, id, 'sessions'), () => {
      this.step('SELECT sessions', id);
      const row = this.stmts.getSession.get(id);
      if (row === undefined) {
        this.assertNoOrphanEvents(id);
        return undefined;
      }
      const current = rowToSummary(row, this.file);
      const next = applyPatch(current, valid, nextUpdatedAt(current.updatedAt));
      this.step('UPDATE sessions', id);
      this.stmts.updateSummary.run({ id, ...summaryColumns(next) });
      return next;
    });
    if (stored !== undefined) return stored;
    const pending = this.pending.get(id);
    if (pending === undefined) throw errors.notFound(id);
    const merged = { ...pending.patch, ...valid };
    const summary = applyPatch(emptySummary(pending.meta), merged, pending.meta.createdAt);
    pending.patch = merged;
    return summary;
  }

  async delete(id: string, options?: DeleteOptions): Promise<void> {
    this.assertOpen();
    assertValidId(id);
    const ifUpdatedAt = validateDeleteOptions(options);
    const existed = this.transaction('write', this.context(`deleting session ${id}`, id, 'sessions'), () => {
      if (ifUpdatedAt !== undefined) {
        // Under the write lock: no append or update can land between this test and the delete.
        this.step('SELECT sessions', id);
        const current = this.stmts.updatedAtOf.get(id);
        if (current !== undefined && current !== ifUpdatedAt)
          throw deleteConflict(id, ifUpdatedAt, String(current));
      }
      // Events first, in the same transaction: no reader ever sees a header without its log.
      this.step('DELETE events', id);
      const deletedEvents = this.stmts.deleteEvents.run(id).changes;
      this.step('DELETE sessions', id);
      const existed = this.stmts.deleteSession.run(id).changes > 0;
      // Events without their sessions row: the row is damaged. Throwing rolls the delete back, so
      // the events are kept for repair rather than destroyed under a NOT_FOUND.
      if (!existed && deletedEvents > 0) throw sessionRowDamaged(this.file, id);
      return existed;
    });
    const wasPending = this.pending.delete(id);
    if (!existed && !wasPending) throw errors.notFound(id);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.pending.clear();
    // Relaxed commits since the last boundary batch are in the WAL, unsynced. Closing the last
    // connection would checkpoint and sync them, but another connection (a second instance,
    // another process, a CLI) may keep the database open: sync the WAL here, so the loss window
    // of `durability: 'relaxed'` ends at close() either way.
    let syncError: unknown;
    const wal = this.walOnClose;
    if (wal !== undefined) {
      try {
        syncWalFile(wal, this.internals.fsync);
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

function validateOptions(options: unknown): SqliteStoreOptions {
  if (typeof options !== 'object' || options === null)
    throw errors.invalid('openSqliteStore: options must be an object');
  const o = options as SqliteStoreOptions;
  if (typeof o.path !== 'string' || o.path === '')
    throw errors.invalid('openSqliteStore: path must be a non-empty string');
  if (o.durability !== undefined && o.durability !== 'strict' && o.durability !== 'relaxed') {
    throw errors.invalid(`openSqliteStore: durability must be 'strict' or 'relaxed'`);
  }
  if (
    o.busyTimeoutMs !== undefined &&
    (!Number.isSafeInteger(o.busyTimeoutMs) || o.busyTimeoutMs < 0 || o.busyTimeoutMs > 0x7fffffff)
  ) {
    throw errors.invalid('openSqliteStore: busyTimeoutMs must be a non-negative integer');
  }
  if (o.maxPageCount !== undefined && (!Number.isSafeInteger(o.maxPageCount) || o.maxPageCount < 1)) {
    throw errors.invalid('openSqliteStore: maxPageCount must be a positive integer');
  }
  if (
    o.boundaryTypes !== undefined &&
    (!Array.isArray(o.boundaryTypes) || !o.boundaryTypes.every((t) => typeof t === 'string'))
  ) {
    throw errors.invalid('openSqliteStore: boundaryTypes must be an array of strings');
  }
  if (o.beforeStorageStep !== undefined && typeof o.beforeStorageStep !== 'function')
    throw errors.invalid('openSqliteStore: beforeStorageStep must be a function');
  return o;
}

/**
 * Creates the database file 0600 (and its directory 0700) when it is missing, and refuses a
 * symbolic link at the path: writes never follow a planted link (SPEC §5). An existing file is
 * left to SQLite, so a path under a regular file fails as SQLITE_CANTOPEN.
 */
function prepareFile(file: string): { lstatError?: unknown } {
  let kind: 'absent' | 'link' | 'other';
  let lstatError: unknown;
  try {
    kind = lstatSync(file).isSymbolicLink() ? 'link' : 'other';
  } catch (error) {
    kind = isENOENT(error) ? 'absent' : 'other';
    if (kind === 'other') lstatError = error;
  }
  if (kind === 'link') {
    throw new TidemarkError(
      'IO',
      `opening ${file}: the path is a symbolic link, which tidemark does not follow`,
      {
        errno: 'ELOOP',
      },
    );
  }
  if (kind !== 'absent') return lstatError === undefined ? {} : { lstatError };
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    closeSync(
      openSync(file, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600),
    );
  } catch (error) {
    // Another opener created it between our look and our create: that is fine.
    if ((error as { code?: unknown }).code === 'EEXIST') return {};
    throw toIoError(error, `creating ${file}`);
  }
  return {};
}

/**
 * Runs the steps of opening again while they fail with SQLITE_BUSY, for up to `timeoutMs`. Several
 * processes opening one fresh file at once contend for the locks of the journal-mode switch and
 * the migration, and some of those paths answer BUSY at once instead of waiting in the busy
 * handler (a separate-process test saw it when the version header came to be read before the
 * switch). Every step is idempotent, so a retry is safe.
 */
async function retryWhileBusy(db: Database.Database, timeoutMs: number, steps: () => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      steps();
      return;
    } catch (error) {
      if (!sqliteCodeOf(error)?.startsWith('SQLITE_BUSY') || Date.now() >= deadline) throw error;
      // A retry must start outside any transaction (a BUSY COMMIT whose ROLLBACK failed too leaves
      // one open, and pragmas refuse to run inside it): end it, or give up with the BUSY.
      if (db.inTransaction) {
        try {
          db.exec('ROLLBACK');
        } catch {
          throw error;
        }
        if (db.inTransaction) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
    }
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
  const file = o.path;
  const memory = file === ':memory:';
  const { lstatError } = memory ? {} : prepareFile(file);
  const step = o.beforeStorageStep;
  let db: Database.Database | undefined;
  try {
    try {
      step?.('open');
      db = new Database(file, { timeout: o.busyTimeoutMs ?? 5000 });
    } catch (error) {
      // better-sqlite3 checks the directory itself and throws a bare TypeError; the file system's
      // own answer (ENOTDIR, EACCES, …) says more.
      if (error instanceof TypeError && lstatError !== undefined)
        throw toIoError(lstatError, `opening ${file}`);
      throw error;
    }
    const opened = db;
    await retryWhileBusy(opened, o.busyTimeoutMs ?? 5000, () => {
      // Refuse a newer or foreign database while it is untouched: switching to WAL rewrites its header.
      refuseUnknown(opened, file, step);
      if (!memory) {
        step?.('PRAGMA journal_mode');
        const mode = opened.pragma('journal_mode = WAL', { simple: true });
        if (mode !== 'wal')
          throw new TidemarkError('IO', `opening ${file}: SQLite refused WAL mode (got ${String(mode)})`);
      }
      step?.('PRAGMA synchronous');
      opened.pragma(`synchronous = ${o.durability === 'relaxed' ? 'NORMAL' : 'FULL'}`);
      step?.('PRAGMA foreign_keys');
      opened.pragma('foreign_keys = ON');
      if (o.maxPageCount !== undefined) {
        step?.('PRAGMA max_page_count');
        opened.pragma(`max_page_count = ${o.maxPageCount}`);
      }
      migrate(opened, file, step);
    });
    const store = new SqliteStore(db, file, o, internals);
    connectionOf.set(store, db);
    return store;
  } catch (error) {
    try {
      db?.close();
    } catch {
      // The open error is the one to report.
    }
    throw mapSqliteError(error, { file, what: `opening ${file}` });
  }
}
