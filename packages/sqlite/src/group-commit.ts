// Group commit (contract §6.5): appends to different sessions that reach the store together share
// one write transaction and so one WAL sync, each batch under its own savepoint. better-sqlite3 is
// synchronous, so "together" means within one turn of the event loop: the appends are collected
// and written when the turn's other callbacks have had their say (setImmediate), all in one
// BEGIN IMMEDIATE … COMMIT. A session appending alone is written at the end of the current
// microtask queue instead, so that it waits for nobody.
//
// What each append may assume:
// - its batch is all or nothing: a batch's CONFLICT, INVALID or storage error rolls back to its
//   savepoint and fails that append alone; the other batches of the group still commit. So does a
//   CONFLICT of its `after` check (append(…, { after })), made under that savepoint before the
//   batch writes anything;
// - it resolves only after the COMMIT that holds its batch returned (with synchronous=FULL, after
//   the WAL sync), and a failed BEGIN or COMMIT (or a failure that made SQLite roll back the whole
//   transaction) fails every append of the group with a typed error, nothing of it stored;
// - the per-session order is the base store's: it never hands two appends of one session to
//   storage at once, so a group holds at most one batch per session.
import { type AppendResult, type PreparedEvent, type Reservation, TidemarkError } from '@tidemark/core';
import { appendBatch, appendContext, appendInTransaction } from './append.js';
import type { SqliteConnection } from './connection.js';
import { appendError, mapSqliteError } from './errors.js';

/** An append waiting for its group's commit. */
interface QueuedAppend {
  id: string;
  batch: readonly PreparedEvent[];
  reservation: Reservation | undefined;
  /** The event the batch was planned after, checked in the transaction that writes it. */
  after: PreparedEvent | undefined;
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; result: AppendResult } | { ok: false; error: unknown };

/**
 * Most batches one transaction holds: a group is one synchronous call, and the event loop waits for
 * all of it. Appends beyond it go into the next group, started right after.
 */
export const MAX_GROUP = 256;

// Taken at load: a test that fakes timers must not stall every append of the store.
const nextTurn: (callback: () => void) => void = globalThis.setImmediate;

/** Collects the appends of one store connection into groups and commits each group once. */
export class AppendGroups {
  private queued: QueuedAppend[] = [];
  private scheduled = false;
  /** The session of the last group when it held that session alone; undefined after a shared one. */
  private soloSession: string | undefined;

  constructor(private readonly conn: SqliteConnection) {}

  /** Queues `batch` for session `id`; settles once the commit that holds it returned. */
  append(
    id: string,
    batch: readonly PreparedEvent[],
    reservation: Reservation | undefined,
    after: PreparedEvent | undefined,
  ): Promise<AppendResult> {
    return new Promise<AppendResult>((resolve, reject) => {
      this.queued.push({ id, batch, reservation, after, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      // The same session as last time, alone: no one to wait for (appends issued in this same
      // tick still join, their microtasks run first). Other sessions are writing: let the rest of
      // this event-loop turn (other I/O callbacks, other sessions' awaits) join the group.
      if (id === this.soloSession) queueMicrotask(this.flush);
      else nextTurn(this.flush);
    });
  }

  private readonly flush = (): void => {
    const group = this.queued.length > MAX_GROUP ? this.queued.splice(0, MAX_GROUP) : this.queued;
    if (group === this.queued) {
      this.queued = [];
      this.scheduled = false;
    } else {
      nextTurn(this.flush);
    }
    this.soloSession = group.length === 1 ? group[0]!.id : undefined;
    try {
      commitGroup(this.conn, group);
    } catch (error) {
      // Not reached by storage errors (commitGroup settles each append itself); a bug must still
      // not leave an append pending forever. Settled promises ignore a second settlement.
      for (const item of group) item.reject(error);
    }
  };
}

/** Writes `group` in one transaction and settles each of its appends. */
function commitGroup(conn: SqliteConnection, group: readonly QueuedAppend[]): void {
  if (group.length === 1) {
    // Alone: the transaction itself is the batch's unit, no savepoint needed.
    const only = group[0]!;
    let result: AppendResult;
    try {
      result = appendBatch(conn, only.id, only.batch, only.reservation, only.after);
    } catch (error) {
      only.reject(error);
      return;
    }
    only.resolve(result);
    return;
  }
  let outcomes: Outcome[];
  try {
    outcomes = writeGroup(conn, group);
  } catch (error) {
    for (const item of group) item.reject(errorFor(conn, error, item.id));
    return;
  }
  for (let i = 0; i < group.length; i++) {
    const outcome = outcomes[i]!;
    if (outcome.ok) group[i]!.resolve(outcome.result);
    else group[i]!.reject(outcome.error);
  }
}

/**
 * One transaction for every batch of `group`. Relaxed durability commits it at synchronous=FULL
 * when any batch closes a unit of work, as a lone boundary batch would be.
 * @throws the raw error of BEGIN, COMMIT, or of a batch after which the transaction is gone.
 */
function writeGroup(conn: SqliteConnection, group: readonly QueuedAppend[]): Outcome[] {
  const write = () =>
    conn.transactionUnmapped('write', group[0]!.id, () => group.map((item) => inSavepoint(conn, item)));
  const syncNow = conn.relaxed && group.some((item) => item.batch.some((p) => conn.isBoundary(p.event)));
  return syncNow ? conn.durably(conn.context('appending to a group of sessions'), write) : write();
}

/** Writes one batch under its own savepoint: on failure only this batch is rolled back. */
function inSavepoint(conn: SqliteConnection, item: QueuedAppend): Outcome {
  conn.step('SAVEPOINT', item.id);
  conn.stmts.savepoint.run();
  try {
    const result = appendInTransaction(conn, item.id, item.batch, item.reservation, item.after);
    conn.step('RELEASE', item.id);
    conn.stmts.release.run();
    return { ok: true, result };
  } catch (error) {
    // SQLite rolls a whole transaction back on some errors (FULL, IOERR, BUSY, NOMEM): then the
    // group's earlier batches are gone too, and the group fails as one.
    if (!conn.db.inTransaction) throw error;
    try {
      conn.step('ROLLBACK TO', item.id);
      conn.stmts.rollbackTo.run();
      conn.step('RELEASE', item.id);
      conn.stmts.release.run();
    } catch {
      // The batch's writes could not be undone alone: none of the group may commit.
      throw error;
    }
    return { ok: false, error: errorFor(conn, error, item.id) };
  }
}

/** The typed error one append of a group reports for `error`, located at its own session. */
function errorFor(conn: SqliteConnection, error: unknown, id: string): unknown {
  const mapped = mapSqliteError(error, appendContext(conn, id));
  // Mapped before it reached the group (the relaxed sync pragma): name this append's session.
  if (mapped.sessionId !== undefined || mapped.code !== 'IO') return appendError(mapped, id);
  return new TidemarkError('IO', `session ${id}: ${mapped.message}`, {
    cause: mapped.cause,
    sessionId: id,
    retryable: mapped.retryable,
    ...(mapped.errno !== undefined && { errno: mapped.errno }),
  });
}
