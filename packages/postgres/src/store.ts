// The PostgreSQL backend. Each public method checks CLOSED, validates, applies the reservation
// rules and calls one storage function (storageHas, storageAppend, storageLoad, …) with the hook
// signatures of the core layer's SessionStoreBase, so moving onto that base is mechanical.
//
// Appends are single writer without SERIALIZABLE: one autocommit statement per attempt, a
// data-modifying CTE whose conditional UPDATE (… WHERE next_seq = $expected) or first INSERT
// (ON CONFLICT DO NOTHING) gates the INSERT of the events, so the claim of the seqs and their
// rows commit together or not at all. The loser re-reads and compares the stored events.
import { inspect } from 'node:util';
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
  type ListProblem,
  type ListQuery,
  type LoadedSession,
  type LoadOptions,
  loadedSession,
  nextUpdatedAt,
  nowIso,
  type PreparedEvent,
  planAppend,
  prepareBatch,
  type ReadRange,
  type SessionEvent,
  type SessionMeta,
  type SessionPage,
  type SessionStore,
  type SessionSummary,
  type SummaryPatch,
  summaryAfterAppend,
  TidemarkError,
  type ValidListQuery,
  validateCreate,
  validateDeleteOptions,
  validateListQuery,
  validateLoadOptions,
  validatePatch,
  validateRange,
} from '@tidemark/core';
import pg from 'pg';
import { Connections, type Session } from './db.js';
import { isUniqueViolation, mapPgError } from './errors.js';
import {
  cutTail,
  type PostgresRepairOptions,
  type PostgresRepairReport,
  type PostgresVerifyReport,
  repairSession,
  verifySessions,
} from './maintenance.js';
import { type PostgresStoreOptions, passwordOf, resolvePostgresOptions } from './options.js';
import {
  decodeEventRows,
  type EncodedEvent,
  type EventRow,
  encodeEvent,
  encodeText,
  rowToMeta,
  rowToSummary,
  SESSION_COLUMNS,
  type SessionRow,
  summaryColumns,
} from './rows.js';
import { migrate, POSTGRES_SCHEMA_VERSION, type TableNames, tableNames } from './schema.js';

/** Events fetched per query by `read()`: bounds its memory and keeps each query short. */
export const READ_PAGE_SIZE = 1000;

/** Attempts of one append against concurrent writers before it reports a retryable CONFLICT. */
const APPEND_ATTEMPTS = 8;

/** A session not yet materialized: created here, no batch stored yet. */
interface Reservation {
  meta: Omit<SessionMeta, 'formatVersion'>;
  patch: SummaryPatch;
}

/** What an append needs of a stored session: its identity, next seq and the fields it rewrites. */
interface Head {
  createdAt: string;
  summary: SessionSummary;
}

/** The answer for events stored under an id whose `sessions` row is missing: damage, not absence. */
function sessionRowDamaged(id: string): TidemarkError {
  return errors.corrupt(
    `session ${id}: table sessions has no row id=${id}, but table events still holds its events, so the ` +
      'sessions row is damaged. Run `tidemark verify` to locate the damage, then `tidemark repair`',
    { table: 'sessions', row: `id=${id}` },
    id,
  );
}

/** A session store on PostgreSQL. Returned by {@link openPostgresStore}. */
export class PostgresStore implements SessionStore {
  readonly #db: Connections;
  readonly #ownsPool: boolean;
  readonly #t: TableNames;
  readonly #isBoundary: BoundaryPredicate;
  readonly #limits: { maxEventBytes?: number; maxDepth?: number };
  readonly #reservations = new Map<string, Reservation>();
  /** Last known head per session, so a steady writer appends in one round trip; checked by the UPDATE. */
  readonly #heads = new Map<string, Head>();
  readonly #schema: string;
  #closed = false;

  /** @internal Use {@link openPostgresStore}. */
  constructor(db: Connections, ownsPool: boolean, schema: string, options: PostgresStoreOptions) {
    this.#db = db;
    this.#ownsPool = ownsPool;
    this.#schema = schema;
    this.#t = tableNames(schema);
    this.#isBoundary = boundaryPredicate(options.boundaryTypes);
    this.#limits = {
      ...(options.maxEventBytes !== undefined && { maxEventBytes: options.maxEventBytes }),
      ...(options.maxDepth !== undefined && { maxDepth: options.maxDepth }),
    };
  }

  /** Never shows the pool or its connection parameters. */
  [inspect.custom](): string {
    return `PostgresStore { schema: ${JSON.stringify(this.#schema)}, closed: ${this.#closed} }`;
  }

  /** The schema this store's tables live in. */
  get schema(): string {
    return this.#schema;
  }

  private assertOpen(): void {
    if (this.#closed) throw errors.closed();
  }

  // ---- public methods: validation and reservation rules around the storage functions ----

  async create(init?: CreateInit): Promise<SessionMeta> {
    this.assertOpen();
    const { meta, patch } = validateCreate(init, generateId);
    if (this.#reservations.has(meta.id) || (await this.storageHas(meta.id)))
      throw errors.alreadyExists(meta.id);
    this.assertOpen();
    if (this.#reservations.has(meta.id)) throw errors.alreadyExists(meta.id);
    this.#reservations.set(meta.id, { meta, patch });
    return { ...structuredClone(meta), formatVersion: POSTGRES_SCHEMA_VERSION };
  }

  async append(id: string, events: readonly SessionEvent[]): Promise<AppendResult> {
    this.assertOpen();
    assertValidId(id);
    const batch = prepareBatch(events, this.#limits, id);
    const result = await this.storageAppend(id, batch, this.#reservations.get(id));
    this.#reservations.delete(id);
    return result;
  }

  async load(id: string, options?: LoadOptions): Promise<LoadedSession> {
    this.assertOpen();
    assertValidId(id);
    return this.storageLoad(id, validateLoadOptions(options));
  }

  read(id: string, range?: ReadRange): AsyncIterable<SessionEvent> {
    const self = this;
    return {
      async *[Symbol.asyncIterator]() {
        self.assertOpen();
        assertValidId(id);
        const { fromSeq, toSeq } = validateRange(range);
        for await (const event of self.storageRead(id, fromSeq, toSeq)) {
          self.assertOpen();
          yield event;
        }
      },
    };
  }

  async list(query?: ListQuery): Promise<SessionPage> {
    this.assertOpen();
    return this.storageList(validateListQuery(query));
  }

  async has(id: string): Promise<boolean> {
    this.assertOpen();
    assertValidId(id);
    return this.storageHas(id);
  }

  async update(id: string, patch: SummaryPatch): Promise<SessionSummary> {
    this.assertOpen();
    assertValidId(id);
    const valid = validatePatch(patch);
    const stored = await this.storageUpdate(id, valid);
    if (stored !== undefined) return stored;
    const reservation = this.#reservations.get(id);
    if (reservation === undefined) throw errors.notFound(id);
    reservation.patch = { ...reservation.patch, ...valid };
    return applyPatch(emptySummary(reservation.meta), reservation.patch, reservation.meta.createdAt);
  }

  async delete(id: string, options?: DeleteOptions): Promise<void> {
    this.assertOpen();
    assertValidId(id);
    const ifUpdatedAt = validateDeleteOptions(options);
    const outcome = await this.storageDelete(id, ifUpdatedAt);
    const wasReserved = this.#reservations.delete(id);
    if (outcome === 'absent' && !wasReserved) throw errors.notFound(id);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#reservations.clear();
    await this.storageClose();
  }

  /** Checks one session (`{ id }`) or every session: checksums, seq gaps, counts. Read-only. */
  async verify(target?: { id?: string }): Promise<PostgresVerifyReport> {
    this.assertOpen();
    if (target?.id !== undefined) assertValidId(target.id);
    return this.storageVerify(target?.id);
  }

  /** Cuts an interrupted tail and/or moves damaged events (and all after them) to quarantine. */
  async repair(id: string, options?: PostgresRepairOptions): Promise<PostgresRepairReport> {
    this.assertOpen();
    assertValidId(id);
    this.#heads.delete(id);
    return this.storageRepair(id, options ?? {});
  }

  // ---- storage functions (the hooks of SessionStoreBase) ----

  /** True when stored; CORRUPT when only events are (a damaged sessions row); false when absent. */
  protected async storageHas(id: string): Promise<boolean> {
    const t = this.#t;
    const found = await this.#db.run(this.#db.context(`looking up session ${id}`, id), (s) =>
      s.query<{ session: boolean; events: boolean }>(
        'SELECT sessions',
        `SELECT EXISTS (SELECT 1 FROM ${t.sessions} WHERE id = $1) AS session,
                EXISTS (SELECT 1 FROM ${t.events} WHERE session_id = $1) AS events`,
        [id],
      ),
    );
    const row = found.rows[0]!;
    if (row.session) return true;
    if (row.events) throw sessionRowDamaged(id);
    return false;
  }

  /** Writes the batch (or confirms an idempotent retry); NOT_FOUND when neither stored nor reserved. */
  protected async storageAppend(
    id: string,
    batch: readonly PreparedEvent[],
    reservation: Reservation | undefined,
  ): Promise<AppendResult> {
    const encoded = batch.map(encodeEvent);
    const context = this.#db.context(`appending to session ${id}`, id);
    try {
      for (let attempt = 0; attempt < APPEND_ATTEMPTS; attempt++) {
        this.assertOpen();
        const cached = this.#heads.get(id);
        const head = cached ?? (await this.readHead(id));
        if (head === undefined) {
          if (reservation === undefined) throw errors.notFound(id);
          planAppend(id, 0, batch); // CONFLICT unless the batch starts at seq 0
          const summary = this.firstSummary(reservation, batch);
          if (await this.insertFirst(id, reservation, summary, encoded, context)) {
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
          const stored = await this.readRange(id, plan.fromSeq, plan.toSeq, context);
          if (stored.length === batch.length) {
            assertSameEvents(id, stored, batch);
            return { nextSeq: head.summary.eventCount };
          }
          continue; // the tail was cut meanwhile
        }
        const summary = summaryAfterAppend(
          head.summary,
          batch.map((item) => item.event),
          this.#isBoundary,
          nextUpdatedAt(head.summary.updatedAt),
        );
        if (await this.advance(id, head, summary, encoded, context)) {
          this.#heads.set(id, { createdAt: head.createdAt, summary });
          return { nextSeq: summary.eventCount };
        }
        this.#heads.delete(id); // another writer moved the session: re-read
      }
    } catch (error) {
      this.#heads.delete(id);
      if (isUniqueViolation(error)) {
        // A writer that bypassed next_seq stored these seqs, or events outlived a damaged row.
        if (!(await this.storageHas(id))) throw sessionRowDamaged(id);
        throw new TidemarkError('CONFLICT', `session ${id}: another writer stored these seqs first`, {
          sessionId: id,
          cause: error instanceof TidemarkError ? error.cause : error,
        });
      }
      throw error;
    }
    throw errors.conflict(`session ${id}: other writers kept moving the session; retry`, id, true);
  }

  private firstSummary(reservation: Reservation, batch: readonly PreparedEvent[]): SessionSummary {
    const now = nowIso();
    return summaryAfterAppend(
      applyPatch(emptySummary(reservation.meta), reservation.patch, now),
      batch.map((item) => item.event),
      this.#isBoundary,
      now,
    );
  }

  /** The stored head of a session (summary, next seq), or undefined when absent (CORRUPT for orphans). */
  private async readHead(id: string): Promise<Head | undefined> {
    const t = this.#t;
    const result = await this.#db.run(this.#db.context(`appending to session ${id}`, id), (s) =>
      s.query<SessionRow & { max_seq: string | null }>(
        'SELECT sessions',
        `SELECT ${SESSION_COLUMNS}, (SELECT max(seq) FROM ${t.events} WHERE session_id = $1) AS max_seq
         FROM (VALUES (1)) AS one LEFT JOIN ${t.sessions} ON id = $1`,
        [id],
      ),
    );
    const row = result.rows[0]!;
    if (row.id === null) {
      if (row.max_seq !== null) throw sessionRowDamaged(id);
      return undefined;
    }
    const summary = rowToSummary(row);
    const logEnd = row.max_seq === null ? 0 : Number(row.max_seq) + 1;
    if (logEnd !== summary.eventCount) {
      throw errors.corrupt(
        `session ${id}: the summary counts ${summary.eventCount} events but the log ends at seq ${String(row.max_seq)}`,
        { table: 'sessions', row: `id=${id}`, seq: Math.min(logEnd, summary.eventCount) },
        id,
      );
    }
    return { createdAt: row.created_at, summary };
  }

  private eventArrays(encoded: readonly EncodedEvent[]): unknown[] {
    return [
      encoded.map((e) => e.seq),
      encoded.map((e) => e.type),
      encoded.map((e) => e.time),
      encoded.map((e) => e.data),
      encoded.map((e) => e.checksum),
    ];
  }

  /** The first batch: session row and events in one statement; false when the row existed. */
  private async insertFirst(
    id: string,
    reservation: Reservation,
    summary: SessionSummary,
    encoded: readonly EncodedEvent[],
    context: ReturnType<Connections['context']>,
  ): Promise<boolean> {
    const t = this.#t;
    const { meta } = reservation;
    const c = summaryColumns(summary);
    const result = await this.#db.run(context, (s) =>
      s.query(
        'INSERT sessions+events',
        `WITH head AS (
           INSERT INTO ${t.sessions} (id, format_version, created_at, updated_at, cwd, parent_id, parent_seq,
             next_seq, committed_seq, interrupted, title, first_prompt, tags, attrs)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
           ON CONFLICT (id) DO NOTHING RETURNING id)
         INSERT INTO ${t.events} (session_id, seq, type, time, data, checksum)
         SELECT $1, u.seq, u.type, u.time, u.data, u.checksum
         FROM unnest($15::bigint[], $16::text[], $17::text[], $18::text[], $19::integer[])
           AS u(seq, type, time, data, checksum)
         WHERE EXISTS (SELECT 1 FROM head)`,
        [
          id,
          POSTGRES_SCHEMA_VERSION,
          meta.createdAt,
          c.updated_at,
          encodeText(meta.cwd),
          meta.parent?.id ?? null,
          meta.parent?.seq ?? null,
          c.next_seq,
          c.committed_seq,
          c.interrupted,
          c.title,
          c.first_prompt,
          c.tags,
          c.attrs,
          ...this.eventArrays(encoded),
        ],
      ),
    );
    return result.rowCount === encoded.length;
  }

  /** A later batch: advance next_seq from the head's value and insert, in one statement. */
  private async advance(
    id: string,
    head: Head,
    summary: SessionSummary,
    encoded: readonly EncodedEvent[],
    context: ReturnType<Connections['context']>,
  ): Promise<boolean> {
    const t = this.#t;
    const result = await this.#db.run(context, (s) =>
      s.query(
        'UPDATE sessions+INSERT events',
        `WITH head AS (
           UPDATE ${t.sessions} SET next_seq = $2, updated_at = $3, committed_seq = $4, interrupted = $5,
             first_prompt = $6
           WHERE id = $1 AND next_seq = $7 AND updated_at = $8 AND created_at = $9 RETURNING id)
         INSERT INTO ${t.events} (session_id, seq, type, time, data, checksum)
         SELECT $1, u.seq, u.type, u.time, u.data, u.checksum
         FROM unnest($10::bigint[], $11::text[], $12::text[], $13::text[], $14::integer[])
           AS u(seq, type, time, data, checksum)
         WHERE EXISTS (SELECT 1 FROM head)`,
        [
          id,
          summary.eventCount,
          summary.updatedAt,
          summary.committedSeq,
          summary.interrupted,
          encodeText(summary.firstPrompt),
          head.summary.eventCount,
          head.summary.updatedAt,
          head.createdAt,
          ...this.eventArrays(encoded),
        ],
      ),
    );
    return result.rowCount === encoded.length;
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

  private async selectEvents(s: Session, id: string, fromSeq: number, toSeq: number): Promise<EventRow[]> {
    const result = await s.query<EventRow>(
      'SELECT events',
      `SELECT seq, type, time, data, checksum FROM ${this.#t.events}
       WHERE session_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq`,
      [id, fromSeq, toSeq],
    );
    return result.rows;
  }

  /** Selects the sessions row (FOR UPDATE when `lock`); CORRUPT for orphaned events, undefined when absent. */
  private async selectSession(s: Session, id: string, lock: boolean): Promise<SessionRow | undefined> {
    const t = this.#t;
    const result = await s.query<SessionRow>(
      'SELECT sessions',
      `SELECT ${SESSION_COLUMNS} FROM ${t.sessions} WHERE id = $1${lock ? ' FOR UPDATE' : ''}`,
      [id],
    );
    if (result.rows[0] !== undefined) return result.rows[0];
    const orphans = await s.query(
      'SELECT events',
      `SELECT 1 FROM ${t.events} WHERE session_id = $1 LIMIT 1`,
      [id],
    );
    if (orphans.rows.length > 0) throw sessionRowDamaged(id);
    return undefined;
  }

  /** Every event with the commit state, in one snapshot; `cut` quarantines an interrupted tail. */
  protected async storageLoad(id: string, tail: 'keep' | 'cut'): Promise<LoadedSession> {
    const context = this.#db.context(`loading session ${id}`, id);
    if (tail === 'cut') this.#heads.delete(id);
    return this.#db.transaction(
      context,
      async (s) => {
        const row = await this.selectSession(s, id, tail === 'cut');
        if (row === undefined) throw errors.notFound(id);
        let summary = rowToSummary(row);
        const meta = rowToMeta(row);
        if (meta.formatVersion > POSTGRES_SCHEMA_VERSION)
          throw errors.unsupportedFormat(meta.formatVersion, POSTGRES_SCHEMA_VERSION, id);
        const rows = await this.selectEvents(s, id, 0, Number.MAX_SAFE_INTEGER);
        let events = decodeEventRows(id, rows, 0);
        if (events.length !== summary.eventCount) {
          throw errors.corrupt(
            `session ${id}: the summary counts ${summary.eventCount} events but the log holds ${events.length}`,
            { table: 'events', row: `session_id=${id}`, seq: Math.min(events.length, summary.eventCount) },
            id,
          );
        }
        let state = commitStateOf(events, this.#isBoundary);
        if (tail !== 'cut' || !state.interrupted) return loadedSession(meta, summary, events, state);
        const cut = await cutTail(s, this.#t, this.#schema, id, state.committedSeq, nowIso());
        events = events.slice(0, state.committedSeq + 1);
        state = commitStateOf(events, this.#isBoundary);
        summary = {
          ...summary,
          eventCount: events.length,
          committedSeq: state.committedSeq,
          interrupted: false,
        };
        await this.writeSummary(s, id, summary);
        return loadedSession(meta, summary, events, state, cut);
      },
      tail === 'cut' ? 'BEGIN' : 'BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY',
    );
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
  protected async *storageRead(id: string, fromSeq: number, toSeq: number): AsyncIterable<SessionEvent> {
    const context = this.#db.context(`reading session ${id}`, id);
    let next = fromSeq;
    let seen: { createdAt: string; lastSeq: number; lastChecksum: number } | undefined;
    for (;;) {
      this.assertOpen();
      const page = await this.#db.transaction(
        context,
        async (s) => {
          const row = await this.selectSession(s, id, false);
          if (row === undefined) {
            if (seen !== undefined) return undefined;
            throw errors.notFound(id);
          }
          const count = rowToSummary(row).eventCount;
          if (seen !== undefined) {
            if (row.created_at !== seen.createdAt) return undefined;
            const last = await this.selectEvents(s, id, seen.lastSeq, seen.lastSeq);
            if (last[0]?.checksum !== seen.lastChecksum) return undefined;
          }
          const end = Math.min(toSeq, count - 1);
          if (next > end)
            return { events: [] as SessionEvent[], done: true, createdAt: row.created_at, lastChecksum: 0 };
          const last = Math.min(end, next + READ_PAGE_SIZE - 1);
          const rows = await this.selectEvents(s, id, next, last);
          const events = decodeEventRows(id, rows, next);
          if (events.length < last - next + 1) {
            const missing = next + events.length;
            throw errors.corrupt(
              `session ${id}: seq ${missing} is missing from table events`,
              { table: 'events', row: `session_id=${id} seq=${missing}`, seq: missing },
              id,
            );
          }
          return {
            events,
            done: last >= end,
            createdAt: row.created_at,
            lastChecksum: rows[rows.length - 1]!.checksum,
          };
        },
        'BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY',
      );
      if (page === undefined) return;
      for (const event of page.events) yield event;
      if (page.done) return;
      next += page.events.length;
      seen = { createdAt: page.createdAt, lastSeq: next - 1, lastChecksum: page.lastChecksum };
    }
  }

  /** One page of summaries by keyset on (updated_at DESC, id ASC), using the list indexes. */
  protected async storageList(q: ValidListQuery): Promise<SessionPage> {
    const { text, values } = listQuery(this.#t, q);
    const result = await this.#db.run(this.#db.context('listing sessions'), (s) =>
      s.query<SessionRow>('SELECT sessions', text, values),
    );
    const sessions: SessionSummary[] = [];
    const problems: ListProblem[] = [];
    for (const row of result.rows.slice(0, q.limit)) {
      try {
        sessions.push(rowToSummary(row));
      } catch (error) {
        problems.push({
          id: String(row.id),
          error: mapPgError(error, this.#db.context('listing sessions', row.id)),
        });
      }
    }
    const page: SessionPage = { sessions, problems };
    if (result.rows.length > q.limit) {
      const last = result.rows[q.limit - 1]!;
      page.nextCursor = encodeCursor({ updatedAt: String(last.updated_at), id: String(last.id) });
    }
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

  /** Removes events and row in one transaction; CONFLICT when `ifUpdatedAt` no longer matches. */
  protected async storageDelete(id: string, ifUpdatedAt: string | undefined): Promise<'deleted' | 'absent'> {
    this.#heads.delete(id);
    const t = this.#t;
    return this.#db.transaction(this.#db.context(`deleting session ${id}`, id), async (s) => {
      const current = await s.query<{ updated_at: string }>(
        'SELECT sessions',
        `SELECT updated_at FROM ${t.sessions} WHERE id = $1 FOR UPDATE`,
        [id],
      );
      const updatedAt = current.rows[0]?.updated_at;
      if (ifUpdatedAt !== undefined && updatedAt !== undefined && updatedAt !== ifUpdatedAt)
        throw deleteConflict(id, ifUpdatedAt, updatedAt);
      const events = await s.query('DELETE events', `DELETE FROM ${t.events} WHERE session_id = $1`, [id]);
      const session = await s.query('DELETE sessions', `DELETE FROM ${t.sessions} WHERE id = $1`, [id]);
      // Events without their row: the row is damaged. Throwing rolls back, keeping them for repair.
      if (session.rowCount === 0 && (events.rowCount ?? 0) > 0) throw sessionRowDamaged(id);
      return session.rowCount === 0 ? 'absent' : 'deleted';
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

  protected async storageVerify(id: string | undefined): Promise<PostgresVerifyReport> {
    return verifySessions(this.#db, this.#t, id, this.#isBoundary);
  }

  protected async storageRepair(id: string, options: PostgresRepairOptions): Promise<PostgresRepairReport> {
    return repairSession(this.#db, this.#t, this.#schema, id, options, this.#isBoundary);
  }
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

/**
 * Opens a PostgreSQL session store: creates or migrates `schema` (default `tidemark`), sets
 * `synchronous_commit = on`, the timeouts on every connection, and warns through `onWarning` when
 * the server runs with `fsync = off`. Rejects with IO when the server cannot be reached (retryable
 * for connection faults), UNSUPPORTED_FORMAT for a newer or foreign schema.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
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
