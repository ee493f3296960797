// The saver's view of the store: per thread, the folded state and the head it was folded up to.
// Reads bring a cached thread up to date by reading from the last event it knows (one store read,
// which also proves that event is still there: a deleted or replaced log is folded again from the
// start), so the cache is only a hint. Writes append at the head with an explicit seq; on a store
// that checks `append(…, { after })` they name the last event they planned on and the append
// itself confirms the cache (no read first), elsewhere a read in the same call confirms it. CONFLICT
// means another writer got there first (or the log is not the one cached), and the batch is planned
// again from the state read then, which may refuse it.
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import {
  checksAppendAfter,
  isTidemarkError,
  KeyedQueue,
  type SessionEvent,
  type SessionStore,
  TidemarkError,
} from '@tidemark/core';
import { indexBatch } from './batch-index.js';
import { lastEvent, readNewestCold } from './cold-read.js';
import { parseRecord, recordData, type ThreadRecord } from './records.js';
import { isHashedSessionId } from './thread-ids.js';
import { ThreadState } from './thread-state.js';

/** A thread as this saver last saw it. */
interface CachedThread {
  state: ThreadState;
  /** The seq the next batch must start with; 0 when the session does not exist. */
  nextSeq: number;
  /**
   * The last event folded or appended, whole (as the store holds it: read from it, or appended by
   * this saver), for `append(…, { after })`; and its {@link fingerprint}, to recognise the same log
   * on the next read.
   */
  last?: { seq: number; print: string; event: SessionEvent };
}

/** What bringing a thread up to date found. */
interface SyncResult {
  entry: CachedThread;
  /** The log was deleted or replaced since the previous state. */
  replaced: boolean;
}

/** Appends tried per write before a CONFLICT is handed to the caller (others keep appending). */
const MAX_WRITE_ATTEMPTS = 4;

/**
 * First wait before appending again after a refusal that left the log as it was, doubled each
 * time: 50 + 100 + 200 ms outlast the 250 ms a JSONL writer holds an idle thread by default.
 */
const HELD_RETRY_MS = 50;

/** Summary attribute naming the thread a session belongs to. */
export const THREAD_ATTR = 'langgraphThread';

/** Per-thread access to the store, serialized per thread within this saver. */
export class ThreadLog {
  private readonly queue = new KeyedQueue();
  private readonly cache = new Map<string, CachedThread>();

  constructor(
    private readonly store: SessionStore,
    private readonly maxCachedThreads: number,
  ) {}

  /** Runs `fn` with the thread's state brought up to date, alone among this saver's calls on it. */
  read<T>(threadId: string, sessionId: string, fn: (state: ThreadState) => Promise<T> | T): Promise<T> {
    return this.queue.run(sessionId, async () => {
      const { entry } = await this.sync(threadId, sessionId, this.cache.get(sessionId));
      return fn(entry.state);
    });
  }

  /**
   * Runs `fn` on a state holding at least the latest checkpoint of `ns` and what its tuple needs.
   * A thread this saver holds is brought up to date as by {@link read}; one it does not hold is
   * read through the pointers of its last batch without folding it (`cold` is then true), or
   * folded when its log has none.
   */
  readLatest<T>(
    threadId: string,
    sessionId: string,
    ns: string,
    fn: (state: ThreadState, cold: boolean) => Promise<T> | T,
  ): Promise<T> {
    return this.readNewest(threadId, sessionId, ns, 1, fn);
  }

  /**
   * As {@link ThreadLog.readLatest}, with a state holding at least the newest `limit` checkpoints
   * of `ns` (a thread not held is walked back through the `prev` pointers of its checkpoints).
   */
  readNewest<T>(
    threadId: string,
    sessionId: string,
    ns: string,
    limit: number,
    fn: (state: ThreadState, cold: boolean) => Promise<T> | T,
  ): Promise<T> {
    return this.queue.run(sessionId, async () => {
      const cached = this.cache.get(sessionId);
      if (cached === undefined && !isHashedSessionId(sessionId)) {
        const cold = await readNewestCold(this.store, sessionId, ns, limit);
        if (cold !== undefined) return fn(cold.kind === 'found' ? cold.state : new ThreadState(), true);
      }
      const { entry } = await this.sync(threadId, sessionId, cached);
      return fn(entry.state, false);
    });
  }

  /**
   * Appends the records `build` derives from the thread's state as one batch (nothing when it
   * returns none). The call takes its place in the thread's queue at once, so calls run in the
   * order they were made; `ready` (the caller's serialization) is awaited in that place.
   *
   * Only state the store confirmed in this call decides anything. On a store that checks
   * `append(…, { after })` a cached thread is planned on as it is, and the append names the last
   * event it knows: CONFLICT, nothing written, when the log is not the one cached. A plan that
   * writes nothing, or that `build` refuses (by throwing), does not reach the append, so it is
   * confirmed by a read first and `build` decides again. Elsewhere, and for a thread not cached,
   * the thread is brought up to date first (one read from its last known event, which also proves
   * that event is still there, so a deleted or rewritten log is read again from the start), and the
   * append's own seq check confirms nothing was added after that read. On CONFLICT the thread is
   * read again and `build` decides again on the new state (it may refuse); the batch is never just
   * moved to the new head.
   */
  write(
    threadId: string,
    sessionId: string,
    build: (state: ThreadState) => ThreadRecord[],
    ready?: Promise<unknown>,
  ): Promise<void> {
    // Awaited in the queue; until then a rejection must not count as unhandled.
    ready?.catch(() => undefined);
    return this.queue.run(sessionId, async () => {
      await ready;
      const checked = checksAppendAfter(this.store);
      let entry = this.cache.get(sessionId);
      // False while `entry` is the cached thread, unconfirmed: only an append with `after` may act on it.
      let confirmed = false;
      if (!checked || entry?.last === undefined || entry.nextSeq === 0) {
        entry = (await this.sync(threadId, sessionId, entry)).entry;
        confirmed = true;
      }
      for (let attempt = 0; ; ) {
        let records: ThreadRecord[] | undefined;
        try {
          records = build(entry.state);
        } catch (error) {
          if (confirmed) throw error;
        }
        if (records === undefined || records.length === 0) {
          if (confirmed) return;
          // Refused or "already stored" on the cache alone (another host may have deleted or
          // rewritten the thread since): decide again on what the store holds.
          entry = (await this.sync(threadId, sessionId, entry)).entry;
          confirmed = true;
          continue;
        }
        const batch = randomUUID();
        try {
          const indexed = indexBatch(entry.state, [...records, { kind: 'boundary', batch }], entry.nextSeq);
          await this.append(threadId, sessionId, entry, indexed, checked);
          return;
        } catch (error) {
          if (!isTidemarkError(error, 'CONFLICT') && !isTidemarkError(error, 'NOT_FOUND')) {
            // The outcome may be unknown (a lost connection): fold the log again next time.
            this.cache.delete(sessionId);
            throw error;
          }
          const before = entry.last;
          const synced = await this.sync(threadId, sessionId, entry);
          entry = synced.entry;
          if (entry.state.hasBatch(batch)) return;
          // A refusal of a plan made on the cache alone is how a stale cache shows: not a lost race.
          if (confirmed) attempt += 1;
          confirmed = true;
          if (attempt >= MAX_WRITE_ATTEMPTS)
            throw concurrentWriter(threadId, sessionId, synced.replaced, error);
          // Refused while the log stayed as it was: another process holds the thread for writing
          // (a JSONL writer lock, released once that writer is idle). Trying again at once would
          // only be refused again.
          if (!synced.replaced && entry.last?.seq === before?.seq && entry.last?.print === before?.print)
            await delay(HELD_RETRY_MS * 2 ** Math.max(attempt - 1, 0));
        }
      }
    });
  }

  /** Deletes the thread's session. */
  delete(sessionId: string): Promise<void> {
    return this.queue.run(sessionId, async () => {
      this.cache.delete(sessionId);
      try {
        await this.store.delete(sessionId);
      } catch (error) {
        if (!isTidemarkError(error, 'NOT_FOUND')) throw error;
      }
    });
  }

  /**
   * Appends `records` at `entry`'s head and applies them to it. With `checked` (the store checks
   * `after`), the append names the event `entry` ends with, so it lands only on that log.
   */
  private async append(
    threadId: string,
    sessionId: string,
    entry: CachedThread,
    records: ThreadRecord[],
    checked: boolean,
  ): Promise<void> {
    if (entry.nextSeq === 0) await this.createSession(threadId, sessionId);
    const time = new Date().toISOString();
    const events: SessionEvent[] = records.map((record, i) => ({
      seq: entry.nextSeq + i,
      type: eventType(record),
      time,
      data: recordData(record),
    }));
    const after = checked && entry.nextSeq > 0 ? entry.last?.event : undefined;
    const { nextSeq } = await (after === undefined
      ? this.store.append(sessionId, events)
      : this.store.append(sessionId, events, { after }));
    for (const [i, record] of records.entries()) entry.state.apply(record, events[i]!.seq);
    // The store took a deep copy of the batch, so this one (used nowhere else) is what it holds.
    entry.last = lastOf(events[events.length - 1]!);
    entry.nextSeq = nextSeq;
    this.remember(sessionId, entry);
  }

  /** Creates the session (lazily: written with the first batch), naming its thread in the summary. */
  private async createSession(threadId: string, sessionId: string): Promise<void> {
    try {
      await this.store.create({ id: sessionId });
    } catch (error) {
      // Pending here from an earlier failed first batch, or materialized by another writer (then
      // the append at seq 0 answers CONFLICT).
      if (!isTidemarkError(error, 'ALREADY_EXISTS')) throw error;
      return;
    }
    await this.store.update(sessionId, { attrs: { [THREAD_ATTR]: threadId } });
  }

  /** Brings `cached` up to date (or folds the thread from the start when it is unknown or gone). */
  private async sync(
    threadId: string,
    sessionId: string,
    cached: CachedThread | undefined,
  ): Promise<SyncResult> {
    if (cached?.last !== undefined) {
      // One lookup of the last event (from the end of the file on JSONL), no further back than the
      // last one folded, usually settles it: the same event as the last one folded means the same
      // log, and nothing after it.
      const newest = await lastEvent(this.store, sessionId, cached.last.seq);
      if (newest?.seq === cached.last.seq && fingerprint(newest) === cached.last.print) {
        // Kept as read: the event an `after` names is the store's own.
        cached.last = { ...cached.last, event: newest };
        this.remember(sessionId, cached);
        return { entry: cached, replaced: false };
      }
      const tail =
        newest && newest.seq > cached.last.seq
          ? await this.readFrom(sessionId, cached.last.seq, newest.seq - cached.last.seq + 1)
          : undefined;
      const first = tail?.[0];
      if (first !== undefined && fingerprint(first) === cached.last.print) {
        this.foldInto(sessionId, cached, tail!.slice(1));
        this.remember(sessionId, cached);
        return { entry: cached, replaced: false };
      }
    }
    const entry = await this.loadFromStart(threadId, sessionId);
    return { entry, replaced: cached?.last !== undefined };
  }

  private async loadFromStart(threadId: string, sessionId: string): Promise<CachedThread> {
    const entry: CachedThread = { state: new ThreadState(), nextSeq: 0 };
    let loaded: Awaited<ReturnType<SessionStore['load']>>;
    try {
      loaded = await this.store.load(sessionId);
    } catch (error) {
      if (!isTidemarkError(error, 'NOT_FOUND')) throw error;
      this.remember(sessionId, entry);
      return entry;
    }
    const owner = loaded.summary.attrs?.[THREAD_ATTR];
    if (owner !== undefined && owner !== threadId) {
      throw new TidemarkError(
        'CONFLICT',
        `session ${sessionId} holds thread ${JSON.stringify(owner)}, not ${JSON.stringify(threadId)}`,
        { sessionId },
      );
    }
    this.foldInto(sessionId, entry, loaded.events);
    this.remember(sessionId, entry);
    return entry;
  }

  /**
   * The events from `fromSeq` on, or undefined when the session does not exist. `count` is how
   * many there were at the last look: read as the last `count` (from the end of the file on
   * JSONL); if the log grew since, they start after `fromSeq`, and the caller folds the log anew.
   */
  private async readFrom(
    sessionId: string,
    fromSeq: number,
    count: number,
  ): Promise<SessionEvent[] | undefined> {
    const events: SessionEvent[] = [];
    try {
      for await (const event of this.store.read(sessionId, { fromSeq, last: count })) events.push(event);
    } catch (error) {
      if (isTidemarkError(error, 'NOT_FOUND')) return undefined;
      throw error;
    }
    return events;
  }

  private foldInto(sessionId: string, entry: CachedThread, events: readonly SessionEvent[]): void {
    let folded: SessionEvent | undefined;
    try {
      for (const event of events) {
        if (event.seq !== entry.nextSeq) {
          throw new TidemarkError(
            'CORRUPT',
            `session ${sessionId}: event ${event.seq} where ${entry.nextSeq} was due`,
            { sessionId, location: { seq: event.seq } },
          );
        }
        const record = parseRecord(sessionId, event);
        if (record !== undefined) entry.state.apply(record, event.seq);
        entry.nextSeq = event.seq + 1;
        folded = event;
      }
    } finally {
      // Only the last event folded is fingerprinted: a cold fold of a long thread folds thousands.
      if (folded !== undefined) entry.last = lastOf(folded);
    }
  }

  /** Keeps `entry` as the most recently used thread, dropping the least recently used beyond the bound. */
  private remember(sessionId: string, entry: CachedThread): void {
    this.cache.delete(sessionId);
    this.cache.set(sessionId, entry);
    while (this.cache.size > this.maxCachedThreads) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
    }
  }
}

function eventType(record: ThreadRecord): string {
  return record.kind === 'boundary' ? 'turn/end' : `langgraph/${record.kind}`;
}

function lastOf(event: SessionEvent): NonNullable<CachedThread['last']> {
  return { seq: event.seq, print: fingerprint(event), event };
}

/** What identifies an event: our boundaries carry a random batch id, so a replaced log never matches. */
function fingerprint(event: SessionEvent): string {
  const { data } = event;
  const batch =
    typeof data === 'object' && data !== null && !Array.isArray(data) ? data.langgraphBatch : undefined;
  return JSON.stringify([event.seq, event.time, event.type, typeof batch === 'string' ? batch : null]);
}

function concurrentWriter(
  threadId: string,
  sessionId: string,
  replaced: boolean,
  cause: unknown,
): TidemarkError {
  const what = replaced ? 'was deleted or replaced' : 'kept being extended by another writer';
  return new TidemarkError(
    'CONFLICT',
    `thread ${JSON.stringify(threadId)} ${what} since this saver last read it; nothing was written. Read the thread again (getTuple) before writing.`,
    { sessionId, cause, retryable: true },
  );
}
