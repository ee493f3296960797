// The PostgreSQL backend: a SessionStoreBase whose hooks touch the server. The base owns the rules
// (validation, CLOSED, per-session order in this instance, reservations); the hooks own the SQL.
//
// Appends are single writer without SERIALIZABLE (see append.ts): one autocommit statement per
// attempt, gated by a conditional UPDATE of next_seq. The loser re-reads and compares the stored
// events: the same batch is an idempotent success, another one CONFLICT. An append with `after`
// adds the stored event at after.seq to that gate, and re-reads it with the head after a lost
// claim: CONFLICT when it is not `after` any more.
import { inspect } from 'node:util';
import {
  type AppendResult,
  applyPatch,
  assertSameEvents,
  assertStoredAfter,
  commitStateOf,
  deleteConflict,
  emptySummary,
  errors,
  type ListProblem,
  type LoadedSession,
  loadedSession,
  nextUpdatedAt,
  nowIso,
  type PreparedEvent,
  pageFromRows,
  planAppend,
  type RepairOptions,
  type RepairReport,
  type Reservation,
  type SessionEvent,
  type SessionHealth,
  type SessionMeta,
  type SessionPage,
  SessionStoreBase,
  type SessionSummary,
  type SummaryPatch,
  summaryAfterAppend,
  summaryAfterCut,
  type TailPolicy,
  TidemarkError,
  type ValidListQuery,
  type VerifyReport,
} from '@tidemark/core';
import { afterRowOf, type Head, insertFirst, judgeHeadAfter, readHead } from './append.js';
import type { Connections, Session } from './db.js';
import { isUniqueViolation, mapPgError } from './errors.js';
import { AdvanceGroups } from './group-commit.js';
import { cutTail, repairSession, verifyAll, verifySession } from './maintenance.js';
import { POSTGRES_OPTION_NAMES, type PostgresStoreOptions } from './options.js';
import { type PageSource, readPaged } from './read.js';
import {
  decodeEventRows,
  type EventRow,
  encodeEvent,
  encodeText,
  inSeqOrder,
  rowToMeta,
  rowToSummary,
  SESSION_COLUMNS,
  type SessionRow,
  sessionRowDamaged,
  summaryColumns,
} from './rows.js';
import { POSTGRES_SCHEMA_VERSION, type TableNames, tableNames } from './schema.js';
import { presenceOf, sessionRow } from './snapshot.js';
import { type Statements, statementsOf } from './statements.js';

/** pg's own default for a pool made without `max`. */
const DEFAULT_POOL_MAX = 10;

/** Attempts of one append against concurrent writers before it reports a retryable CONFLICT. */
const APPEND_ATTEMPTS = 8;

/** A session store on PostgreSQL. Returned by {@link openPostgresStore}. */
export class PostgresStore extends SessionStoreBase {
  protected readonly formatVersion = POSTGRES_SCHEMA_VERSION;
  /** `append(…, { after })` is checked in the statement that writes the batch (append.ts). */
  protected override readonly storageChecksAfter = true;
  readonly #db: Connections;
  readonly #ownsPool: boolean;
  readonly #t: TableNames;
  readonly #sql: Statements;
  /** Last known head per session, so a steady writer appends in one round trip; checked by the UPDATE. */
  readonly #heads = new Map<string, Head>();
  readonly #schema: string;
  /** Steady appends: alone while a connection is free, else grouped into one statement. */
  readonly #groups: AdvanceGroups;

  /** @internal Use {@link openPostgresStore}. */
  constructor(db: Connections, ownsPool: boolean, schema: string, options: PostgresStoreOptions) {
    super(options, 'openPostgresStore', POSTGRES_OPTION_NAMES);
    this.#db = db;
    this.#ownsPool = ownsPool;
    this.#schema = schema;
    this.#t = tableNames(schema);
    this.#sql = statementsOf(this.#t);
    this.#groups = new AdvanceGroups(db, this.#sql, db.pool.options.max ?? DEFAULT_POOL_MAX);
  }

  /** Never shows the pool or its connection parameters. */
  [inspect.custom](): string {
    let closed = false;
    try {
      this.assertOpen();
    } catch {
      closed = true;
    }
    return `PostgresStore { schema: ${JSON.stringify(this.#schema)}, closed: ${closed} }`;
  }

  /** The schema this store's tables live in. */
  get schema(): string {
    return this.#schema;
  }

  /** True when stored; CORRUPT when only events are (a damaged sessions row); false when absent. */
  protected async storageHas(id: string): Promise<boolean> {
    const presence = await this.#db.run(this.#db.context(`looking up session ${id}`, id), (s) =>
      presenceOf(s, this.#t, id),
    );
    if (presence === 'orphaned') throw sessionRowDamaged(id);
    return presence === 'stored';
  }

  /**
   * Writes the batch (or confirms an idempotent retry); NOT_FOUND when neither stored nor reserved.
   * With `after`, nothing is written unless the events row at after.seq is `after` in the snapshot
   * of the statement that writes (the claim's condition, append.ts). A claim that fails is judged
   * again on a fresh read of the head and that row together: a row that is not `after` there is
   * this append's CONFLICT, at that moment, with nothing written.
   */
  protected async storageAppend(
    id: string,
    batch: readonly PreparedEvent[],
    reservation: Reservation | undefined,
    after?: PreparedEvent,
  ): Promise<AppendResult> {
    const encoded = batch.map(encodeEvent);
    const context = this.#db.context(`appending to session ${id}`, id);
    // What the claim requires of the row at after.seq: the texts an append of `after` writes, until
    // a read finds `after` stored in texts of its own.
    let afterRow = after === undefined ? undefined : afterRowOf(after);
    try {
      for (let attempt = 0; attempt < APPEND_ATTEMPTS; attempt++) {
        this.assertOpen(); // a retry after close() must not reach an ended pool
        const cached = this.#heads.get(id);
        let head = cached;
        if (head === undefined) {
          if (after === undefined) head = await readHead(this.#db, this.#sql, id);
          else ({ head, afterRow } = await judgeHeadAfter(this.#db, this.#sql, id, after, reservation));
        }
        if (head === undefined) {
          // Never with `after` (judgeHeadAfter answered): a session without a row holds no event.
          if (reservation === undefined) throw errors.notFound(id);
          planAppend(id, 0, batch); // CONFLICT unless the batch starts at seq 0
          const summary = this.firstSummary(reservation, batch);
          if (await insertFirst(this.#db, this.#sql, reservation, summary, encoded, context)) {
            this.#heads.set(id, { createdAt: reservation.meta.createdAt, summary });
            return { nextSeq: batch.length };
          }
          continue; // stored meanwhile (another host, or our earlier attempt): compare or advance
        }
        let plan: ReturnType<typeof planAppend>;
        try {
          plan = planAppend(id, head.summary.eventCount, batch);
        } catch (error) {
          if (cached === undefined) throw error;
          this.#heads.delete(id); // another host may have appended: judge against the stored head
          continue;
        }
        if (plan.kind === 'compare') {
          if (cached !== undefined) {
            this.#heads.delete(id);
            continue; // judge a retry against the stored head, not a remembered one
          }
          if (await this.isStoredRetry(id, plan, batch, after, context))
            return { nextSeq: head.summary.eventCount };
          continue; // the tail was cut meanwhile
        }
        const summary = summaryAfterAppend(
          head.summary,
          batch.map((item) => item.event),
          this.settings.isBoundary,
          nextUpdatedAt(head.summary.updatedAt),
        );
        if (await this.#groups.advance({ id, head, summary, encoded, after: afterRow, context })) {
          this.#heads.set(id, { createdAt: head.createdAt, summary });
          return { nextSeq: summary.eventCount };
        }
        // Another writer moved the session, or (with `after`) the row at after.seq is not the one
        // judged: re-read both.
        this.#heads.delete(id);
      }
    } catch (error) {
      this.#heads.delete(id);
      if (isUniqueViolation(error)) {
        // A writer that bypassed next_seq stored these seqs, or events outlived a damaged row:
        // storageHas tells them apart in one snapshot (CORRUPT for events without their row). A
        // session found absent here was deleted after the violation: nothing says it is damaged.
        await this.storageHas(id);
        throw new TidemarkError('CONFLICT', `session ${id}: another writer stored these seqs first`, {
          sessionId: id,
          cause: error instanceof TidemarkError ? error.cause : error,
        });
      }
      throw error;
    }
    throw errors.conflict(`session ${id}: other writers kept moving the session; retry`, id, true);
  }

  /**
   * Judges a batch whose seqs are all stored: true when it is an idempotent retry (and, with
   * `after`, the event before it is `after`), read from after.seq in one snapshot; CONFLICT when
   * different; false when the tail was cut meanwhile (the caller reads the head again).
   */
  private async isStoredRetry(
    id: string,
    plan: { fromSeq: number; toSeq: number },
    batch: readonly PreparedEvent[],
    after: PreparedEvent | undefined,
    context: ReturnType<Connections['context']>,
  ): Promise<boolean> {
    const from = after === undefined ? plan.fromSeq : after.event.seq;
    const stored = await this.readRange(id, from, plan.toSeq, context);
    if (stored.length !== plan.toSeq - from + 1) return false;
    if (after !== undefined) assertStoredAfter(id, stored.shift(), after);
    assertSameEvents(id, stored, batch);
    return true;
  }

  private firstSummary(reservation: Reservation, batch: readonly PreparedEvent[]): SessionSummary {
    const now = nowIso();
    return summaryAfterAppend(
      applyPatch(emptySummary(reservation.meta), reservation.patch, now),
      batch.map((item) => item.event),
      this.settings.isBoundary,
      now,
    );
  }

  private async readRange(
    id: string,
    fromSeq: number,
    toSeq: number,
    context: ReturnType<Connections['context']>,
  ): Promise<SessionEvent[]> {
    const result = await this.#db.run(context, (s) => this.selectEvents(s, id, fromSeq, toSeq));
    return decodeEventRows(id, result, fromSeq);
  }

  private selectEvents(s: Session, id: string, fromSeq: number, toSeq: number): Promise<EventRow[]> {
    const { text, name } = this.#sql.selectEvents;
    return s.rows('SELECT events', text, [id, fromSeq, toSeq], name);
  }

  /**
   * The sessions row (FOR UPDATE when `lock`); CORRUPT for orphaned events, undefined when absent.
   * Both verdicts come from one snapshot, never from two statements (snapshot.ts).
   */
  private async selectSession(s: Session, id: string, lock: boolean): Promise<SessionRow | undefined> {
    const row = await sessionRow(s, this.#t, id, lock);
    if (row === 'orphaned') throw sessionRowDamaged(id);
    return row === 'absent' ? undefined : row;
  }

  /** Every event with the commit state, in one snapshot; `cut` quarantines an interrupted tail. */
  protected async storageLoad(id: string, tail: TailPolicy): Promise<LoadedSession> {
    if (tail === 'cut') return this.loadAndCut(id);
    const { text, name } = this.#sql.load;
    const result = await this.#db.run(this.#db.context(`loading session ${id}`, id), (s) =>
      s.rows('SELECT events', text, [id], name),
    );
    // The row (seq -1) sorts first: a newer format or a damaged row stops decoding the events.
    const rows = inSeqOrder(result);
    const first = rows[0];
    if (first === undefined) throw errors.notFound(id);
    if (first[0] !== '-1') throw sessionRowDamaged(id); // events, but no sessions row
    const header = headerOf(id, JSON.parse(first[3]!) as SessionRow);
    return this.loaded(id, header, decodeEventRows(id, rows, 0, 1));
  }

  /** The session from its header and its decoded events, checked against each other. */
  private loaded(id: string, { meta, summary }: SessionHeader, events: SessionEvent[]): LoadedSession {
    if (events.length !== summary.eventCount) {
      throw errors.corrupt(
        `session ${id}: the summary counts ${summary.eventCount} events but the log holds ${events.length}`,
        { table: 'events', row: `session_id=${id}`, seq: Math.min(events.length, summary.eventCount) },
        id,
      );
    }
    return loadedSession(meta, summary, events, commitStateOf(events, this.settings.isBoundary));
  }

  /** Loads with the row locked and moves an interrupted tail to quarantine, in one transaction. */
  private loadAndCut(id: string): Promise<LoadedSession> {
    this.#heads.delete(id);
    return this.#db.transaction(this.#db.context(`loading session ${id}`, id), async (s) => {
      const row = await this.selectSession(s, id, true);
      if (row === undefined) throw errors.notFound(id);
      const rows = await this.selectEvents(s, id, 0, Number.MAX_SAFE_INTEGER);
      const loaded = this.loaded(id, headerOf(id, row), decodeEventRows(id, rows, 0));
      if (!loaded.interrupted) return loaded;
      const cut = await cutTail(s, this.#t, this.#schema, id, loaded.committedSeq, nowIso());
      const events = loaded.events.slice(0, loaded.committedSeq + 1);
      const state = commitStateOf(events, this.settings.isBoundary);
      const summary = summaryAfterCut(loaded.summary, { ...state, eventCount: events.length });
      await this.writeSummary(s, id, summary);
      return loadedSession(loaded.meta, summary, events, state, cut);
    });
  }

  private async writeSummary(s: Session, id: string, summary: SessionSummary): Promise<void> {
    const c = summaryColumns(summary);
    await s.query(
      'UPDATE sessions',
      `UPDATE ${this.#t.sessions} SET updated_at = $2, next_seq = $3, committed_seq = $4, interrupted = $5,
         title = $6, first_prompt = $7, tags = $8, attrs = $9 WHERE id = $1`,
      [
        id,
        c.updated_at,
        c.next_seq,
        c.committed_seq,
        c.interrupted,
        c.title,
        c.first_prompt,
        c.tags,
        c.attrs,
      ],
    );
  }

  /**
   * Events `fromSeq..toSeq`, paged; each page one snapshot of the sessions row and the events.
   * Ends early when the log this stream was reading is gone (deleted, recreated, tail cut).
   */
  protected storageRead(id: string, fromSeq: number, toSeq: number): AsyncIterable<SessionEvent> {
    return readPaged(this.pageSource(id), id, fromSeq, toSeq, undefined);
  }

  /** The last events of the range, found by index (see read.ts). */
  protected override storageReadLast(
    id: string,
    fromSeq: number,
    toSeq: number,
    last: number,
  ): AsyncIterable<SessionEvent> {
    return readPaged(this.pageSource(id), id, fromSeq, toSeq, last);
  }

  /** What a read stream of session `id` needs of this store. */
  private pageSource(id: string): PageSource {
    const context = this.#db.context(`reading session ${id}`, id);
    return {
      snapshot: (fn) => this.#db.transaction(context, fn, 'BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY'),
      selectSession: (s) => this.selectSession(s, id, false),
      selectEvents: (s, from, to) => this.selectEvents(s, id, from, to),
      assertOpen: () => this.assertOpen(),
    };
  }

  /** One page of summaries by keyset on (updated_at DESC, id ASC), using the list indexes. */
  protected async storageList(q: ValidListQuery): Promise<SessionPage> {
    const { text, values } = listQuery(this.#t, q);
    const result = await this.#db.run(this.#db.context('listing sessions'), (s) =>
      s.query<SessionRow>('SELECT sessions', text, values),
    );
    const problems: ListProblem[] = [];
    // A damaged row keeps its place in the keyset (the cursor may have to follow it) as a
    // placeholder, which is reported as a problem and taken off the page.
    const placeholders = new Set<SessionSummary>();
    const rows = result.rows.map((row, index) => {
      try {
        return rowToSummary(row);
      } catch (error) {
        const id = String(row.id);
        // The row past the limit only says that more follow: its problem belongs to the next page.
        if (index < q.limit)
          problems.push({ id, error: mapPgError(error, this.#db.context('listing sessions', id)) });
        const placeholder = { ...emptySummary({ id, createdAt: '' }), updatedAt: String(row.updated_at) };
        placeholders.add(placeholder);
        return placeholder;
      }
    });
    const page = pageFromRows(rows, q.limit, problems);
    if (placeholders.size > 0) page.sessions = page.sessions.filter((s) => !placeholders.has(s));
    return page;
  }

  /** Applies the patch to a stored session; undefined when not stored. */
  protected async storageUpdate(id: string, patch: SummaryPatch): Promise<SessionSummary | undefined> {
    this.#heads.delete(id);
    return this.#db.transaction(this.#db.context(`updating session ${id}`, id), async (s) => {
      const row = await this.selectSession(s, id, true);
      if (row === undefined) return undefined;
      const current = rowToSummary(row);
      const next = applyPatch(current, patch, nextUpdatedAt(current.updatedAt));
      await this.writeSummary(s, id, next);
      return next;
    });
  }

  /**
   * Removes events and row in one transaction, the row locked first; CONFLICT when `ifUpdatedAt`
   * no longer matches. Deletes nothing unless it holds the lock: without it, a first append could
   * commit between the two DELETEs (each its own snapshot) and keep its events without their row.
   */
  protected async storageDelete(id: string, ifUpdatedAt: string | undefined): Promise<'deleted' | 'absent'> {
    this.#heads.delete(id);
    const t = this.#t;
    return this.#db.transaction(this.#db.context(`deleting session ${id}`, id), async (s) => {
      // Events without their row: the row is damaged. Nothing is deleted, keeping them for repair.
      const row = await this.selectSession(s, id, true);
      if (row === undefined) return 'absent';
      if (ifUpdatedAt !== undefined && row.updated_at !== ifUpdatedAt)
        throw deleteConflict(id, ifUpdatedAt, row.updated_at);
      await s.query('DELETE events', `DELETE FROM ${t.events} WHERE session_id = $1`, [id]);
      await s.query('DELETE sessions', `DELETE FROM ${t.sessions} WHERE id = $1`, [id]);
      return 'deleted';
    });
  }

  protected async storageClose(): Promise<void> {
    this.#heads.clear();
    if (!this.#ownsPool) return;
    try {
      await this.#db.pool.end();
    } catch (error) {
      throw mapPgError(error, this.#db.context('closing the pool'));
    }
  }

  protected async storageVerify(id: string): Promise<SessionHealth> {
    return verifySession(this.#db, this.#t, id, this.settings.isBoundary);
  }

  /** Every session, and every id that only has events left (which `list` cannot show). */
  protected override async storageVerifyAll(): Promise<VerifyReport> {
    return verifyAll(this.#db, this.#t, this.settings.isBoundary);
  }

  protected async storageRepair(id: string, options: Required<RepairOptions>): Promise<RepairReport> {
    this.#heads.delete(id);
    return repairSession(this.#db, this.#t, this.#schema, id, options, this.settings.isBoundary);
  }
}

/** What a load reads from the sessions row. */
interface SessionHeader {
  meta: SessionMeta;
  summary: SessionSummary;
}

/** The header of a loaded session; UNSUPPORTED_FORMAT for a newer format, CORRUPT for a bad row. */
function headerOf(id: string, row: SessionRow): SessionHeader {
  const summary = rowToSummary(row);
  const meta = rowToMeta(row);
  if (meta.formatVersion > POSTGRES_SCHEMA_VERSION)
    throw errors.unsupportedFormat(meta.formatVersion, POSTGRES_SCHEMA_VERSION, id);
  return { meta, summary };
}

/**
 * The list statement. `updated_at <= $u` is the index condition (the scan starts at the cursor in
 * the index order); the tie test on id finishes the keyset. A plain row-value comparison
 * `(updated_at, id) < ($u, $id)` cannot express the mixed order (updated_at DESC, id ASC).
 */
export function listQuery(t: TableNames, q: ValidListQuery): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const where: string[] = [];
  if (q.cwd !== undefined) {
    values.push(encodeText(q.cwd));
    where.push(`cwd = $${values.length}`);
  }
  if (q.cursor !== undefined) {
    values.push(q.cursor.updatedAt, q.cursor.id);
    const u = `$${values.length - 1}`;
    const i = `$${values.length}`;
    where.push(`updated_at <= ${u} AND (updated_at < ${u} OR id > ${i})`);
  }
  values.push(q.limit + 1);
  const filter = where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
  return {
    text: `SELECT ${SESSION_COLUMNS} FROM ${t.sessions} ${filter} ORDER BY updated_at DESC, id ASC LIMIT $${values.length}`,
    values,
  };
}
