// Group commit (contract §6.5) for the steady append: when every connection the store may use is
// already busy with an append, the appends that queue up behind them go to the server together,
// as one statement (one round trip, one transaction, one WAL flush) that advances each session
// and inserts its events. A session appending alone never waits: while a connection is free, an
// append is sent on its own, in the one-session statement of append.ts.
//
// What each append may assume:
// - its batch is all or nothing, and it alone: the statement claims each session with its own
//   conditional UPDATE (next_seq, updated_at, created_at as the append last saw them, and with
//   `after` the events row at after.seq as the append judged it) and inserts the events of the
//   sessions it claimed only. A session another writer moved, or whose row at after.seq is not
//   that one, is simply not claimed (its append re-reads and retries or answers CONFLICT, as
//   after a lone claim that failed);
// - it resolves only after the statement that holds it committed (autocommit, synchronous_commit
//   on): no earlier than a lone append would;
// - a group statement that fails for any reason (a unique violation from one batch, a lost
//   connection, a timeout, a deadlock with another host's group after the retries) fails no
//   append by itself: each append of the group is then sent alone and gets its own answer, typed
//   and naming its session. A group that committed before its connection was lost is recognised
//   there: the lone claim finds next_seq moved, and the append re-reads and finds its batch stored;
// - the base store never hands two appends of one session to storage at once, so a group holds
//   at most one batch per session.
import type { SessionSummary } from '@tidemark/core';
import { type AfterRow, advance, type Head } from './append.js';
import type { Connections } from './db.js';
import type { PgErrorContext } from './errors.js';
import { type EncodedEvent, encodeText } from './rows.js';
import type { Statements } from './statements.js';

/** Most appends one group statement carries: bounds its parameters and the rows it locks. */
export const MAX_GROUP = 256;

/**
 * One advance: the session, the head it was planned against, its new summary and its rows, and
 * with `after` what the events row at after.seq must still hold.
 */
export interface AdvanceRequest {
  id: string;
  head: Head;
  summary: SessionSummary;
  encoded: readonly EncodedEvent[];
  after: AfterRow | undefined;
  context: PgErrorContext;
}

interface QueuedAdvance extends AdvanceRequest {
  resolve: (claimed: boolean) => void;
  reject: (error: unknown) => void;
}

/** Sends the advances of one store, alone while a connection is free and in groups otherwise. */
export class AdvanceGroups {
  #queued: QueuedAdvance[] = [];
  #inFlight = 0;

  /** `slots`: the connections appends may hold at once (the pool's size). */
  constructor(
    private readonly db: Connections,
    private readonly sql: Statements,
    private readonly slots: number,
  ) {}

  /** Advances one session; true when its claim held and its events are stored. */
  advance(request: AdvanceRequest): Promise<boolean> {
    if (this.#inFlight < this.slots) return this.#send(() => this.#alone(request));
    return new Promise<boolean>((resolve, reject) => {
      this.#queued.push({ ...request, resolve, reject });
    });
  }

  async #send<T>(work: () => Promise<T>): Promise<T> {
    this.#inFlight++;
    try {
      return await work();
    } finally {
      this.#inFlight--;
      this.#drain();
    }
  }

  /** A connection came free: everything queued meanwhile goes as one statement. */
  #drain(): void {
    if (this.#queued.length === 0 || this.#inFlight >= this.slots) return;
    const group = this.#queued.splice(0, MAX_GROUP);
    void this.#send(() => this.#group(group));
  }

  #alone({ id, head, summary, encoded, after, context }: AdvanceRequest): Promise<boolean> {
    return advance(this.db, this.sql, id, head, summary, encoded, after, context);
  }

  async #group(group: QueuedAdvance[]): Promise<void> {
    if (group.length > 1) {
      let claimed: Set<string> | undefined;
      try {
        claimed = await this.#groupStatement(group);
      } catch {
        claimed = undefined; // answered below, one append at a time
      }
      if (claimed !== undefined) {
        for (const item of group) item.resolve(claimed.has(item.id));
        return;
      }
    }
    // Alone, each append gets its own answer: its own CONFLICT, or its own typed error.
    await Promise.all(
      group.map((item) =>
        this.#alone(item).then(
          (claimed) => item.resolve(claimed),
          (error: unknown) => item.reject(error),
        ),
      ),
    );
  }

  /** The group's one statement; the ids whose claim held. */
  async #groupStatement(group: readonly QueuedAdvance[]): Promise<Set<string>> {
    // The same lock order on every host, so two hosts' groups rarely deadlock (and retry if so).
    const sorted = [...group].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const events = sorted.flatMap((item) => item.encoded.map((e) => ({ id: item.id, e })));
    const { text, name } = this.sql.advanceGroup;
    const ids = sorted.map((item) => item.id);
    const context = this.db.context(`appending to sessions ${ids.join(', ')}`);
    const result = await this.db.run(context, (s) =>
      s.query<{ id: string }>(
        'UPDATE sessions+INSERT events',
        text,
        [
          ids,
          sorted.map((item) => item.summary.eventCount),
          sorted.map((item) => item.summary.updatedAt),
          sorted.map((item) => item.summary.committedSeq),
          sorted.map((item) => item.summary.interrupted),
          sorted.map((item) => encodeText(item.summary.firstPrompt)),
          sorted.map((item) => item.head.summary.eventCount),
          sorted.map((item) => item.head.summary.updatedAt),
          sorted.map((item) => item.head.createdAt),
          events.map(({ id }) => id),
          events.map(({ e }) => e.seq),
          events.map(({ e }) => e.type),
          events.map(({ e }) => e.time),
          events.map(({ e }) => e.data),
          events.map(({ e }) => e.checksum),
          sorted.map((item) => item.after?.seq ?? null),
          sorted.map((item) => item.after?.type ?? null),
          sorted.map((item) => item.after?.time ?? null),
          sorted.map((item) => item.after?.data ?? null),
        ],
        name,
      ),
    );
    return new Set(result.rows.map((row) => row.id));
  }
}
