// Reading and writing the tidemark sessions behind Mastra's records. Every Mastra write is one
// batch closed by a boundary event that carries the record as it stands after the batch. A batch is
// planned on what the same call read, or, on a store that checks `append(…, { after })`, on what
// this process knows of the log from its own last write or read for a write (known-logs.ts); either
// way the append names the log's last event it was planned after, so it lands only on that log
// (contract §4.2). A batch that lost the seq to another writer, or was planned on a log that changed
// (CONFLICT), is planned again on a fresh read. The session's summary (title, attrs) mirrors the
// record for `list` and is rewritten in full after every batch, with the event count the log has
// after the batch (`atEvents`): a summary whose count is not the store's own `eventCount` was left
// behind by a call that failed after its batch landed, and a reader goes to the log instead (see
// `isCurrent`).
import { randomBytes } from 'node:crypto';
import {
  checksAppendAfter,
  isTidemarkError,
  type JsonValue,
  KeyedQueue,
  nowIso,
  type SessionEvent,
  type SessionStore,
  type SessionSummary,
  TidemarkError,
} from '@tidemark/core';
import type { JsonObject } from './codec.js';
import { type Known, knownLogs } from './known-logs.js';

/** The boundary event that closes every batch this adapter writes. */
export const CLOSE = 'turn/end';

/** An event of a planned batch, before seq and time are filled in. */
export interface PlannedEvent {
  type: string;
  data: JsonValue;
}

/** What one Mastra operation writes to one session. */
export interface Batch {
  /** The events before the closing one. */
  events: PlannedEvent[];
  /** The closing event's data: the record after the batch. */
  close: JsonObject;
  /** The session's summary after the batch. */
  summary: { title?: string; attrs: JsonObject };
  /** The working directory a new session is listed under. */
  cwd?: string;
}

/** A read of a session: where the next batch goes, and the closing event it must link to. */
export interface Head {
  nextSeq: number;
  /** The nonce of the last closing event (null: the session is not stored). */
  lastNonce: string | null;
  /**
   * The log's last event, whole, as the store holds it (undefined: the session is not stored):
   * what the next batch is appended after (`append(…, { after })`).
   */
  last?: SessionEvent;
  /** What this process may keep of this read for its next write (see known-logs.ts). */
  known?: Known;
}

/**
 * What every closing event holds besides the record. `nonce` is random; `prev` is the nonce of the
 * closing event just before the batch (null for the first) and `size` the batch's event count, so
 * that the closing event before it is found at `seq - size`. A batch whose `prev` is not that
 * nonce was planned on a session another host deleted and wrote again to the same length while it
 * was planned (the append's seq check cannot tell); its writer saw that and did not acknowledge
 * it, and every reader skips it.
 */
export interface Link {
  nonce: string;
  prev: string | null;
  size: number;
}

/** The link fields of a closing event, or undefined when it is not one of ours. */
export function linkOf(event: SessionEvent): Link | undefined {
  if (event.type !== CLOSE) return undefined;
  const data = event.data as { nonce?: unknown; prev?: unknown; size?: unknown } | null;
  if (
    data === null ||
    typeof data !== 'object' ||
    typeof data.nonce !== 'string' ||
    typeof data.size !== 'number'
  )
    return undefined;
  return { nonce: data.nonce, prev: typeof data.prev === 'string' ? data.prev : null, size: data.size };
}

/** What a plan decided: a batch to write (none: nothing to write) and the operation's result. */
export interface Plan<T> {
  batch?: Batch;
  result: T;
  /**
   * A thread's messages after the batch, kept for the next write (known-logs.ts). Left out by a
   * batch that changes no message: the messages known before stay known.
   */
  messages?: ReadonlyMap<string, unknown>;
}

/** The last `n` events of a session in seq order; [] when it does not exist. */
export async function readLast(store: SessionStore, id: string, n: number): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  try {
    for await (const event of store.read(id, { last: n })) out.push(event);
  } catch (error) {
    if (isTidemarkError(error, 'NOT_FOUND')) return [];
    throw error;
  }
  return out;
}

/** Every event of a session; [] when it does not exist. */
export async function readAll(store: SessionStore, id: string): Promise<SessionEvent[]> {
  try {
    return (await store.load(id)).events;
  } catch (error) {
    if (isTidemarkError(error, 'NOT_FOUND')) return [];
    throw error;
  }
}

function notOurs(id: string, event: SessionEvent, what: string): TidemarkError {
  return new TidemarkError('CORRUPT', `session ${id}, event ${event.seq}: ${what}`, {
    sessionId: id,
    location: { seq: event.seq },
  });
}

/** The record `key` a closing event carries. */
export function recordOf(id: string, event: SessionEvent, key: string): JsonObject {
  const record = (event.data as JsonObject | null)?.[key];
  if (record === undefined || record === null || typeof record !== 'object' || Array.isArray(record)) {
    throw notOurs(id, event, `a closing event without its ${key} record`);
  }
  return record;
}

/** The event at `seq` of session `id`, undefined when there is none. */
export async function eventAt(
  store: SessionStore,
  id: string,
  seq: number,
): Promise<SessionEvent | undefined> {
  for await (const event of store.read(id, { fromSeq: seq, toSeq: seq })) return event;
  return undefined;
}

/** A head with the record `key` of its last linked batch, and the whole data of that closing event. */
export type RecordHead = Head & { record: JsonObject | undefined; close: JsonObject | undefined };

const notStored = (): RecordHead => ({ nextSeq: 0, lastNonce: null, record: undefined, close: undefined });

/**
 * The head of session `id` and the record `key` of its last linked batch, read from the log's end:
 * the last event, and the closing event before its batch to check the link (more only after a
 * batch that did not link, see {@link Link}). `record` is undefined when the session is not stored;
 * `close` is the whole data of that closing event.
 */
export async function readHead(store: SessionStore, id: string, key: string): Promise<RecordHead> {
  const last = (await readLast(store, id, 1))[0];
  if (last === undefined) return notStored();
  const head = { nextSeq: last.seq + 1, lastNonce: linkOf(last)?.nonce ?? null, last };
  // The record of `close`; kept for the next write when it is the log's last event.
  const found = (close: SessionEvent): RecordHead => ({
    ...head,
    record: recordOf(id, close, key),
    close: close.data as JsonObject,
    ...(close === last && { known: { last } }),
  });
  try {
    let close: SessionEvent | undefined = last;
    while (close !== undefined) {
      const link = linkOf(close);
      if (link === undefined) throw notOurs(id, close, 'not the closing event of a Mastra batch');
      const before = close.seq - link.size;
      if (before < 0) return found(close);
      const previous = await eventAt(store, id, before);
      if (previous === undefined)
        throw notOurs(id, close, `no closing event at seq ${before} before this batch`);
      if (linkOf(previous)?.nonce === link.prev) return found(close);
      close = previous; // a batch planned on an earlier log: the record is the one before it
    }
  } catch (error) {
    if (isTidemarkError(error, 'NOT_FOUND')) return notStored();
    throw error;
  }
  return { ...head, record: undefined, close: undefined };
}

/** The head and record `key` of a log as this process knows it (see known-logs.ts). */
export function knownHead(id: string, known: Known, key: string): RecordHead {
  const { last } = known;
  return {
    nextSeq: last.seq + 1,
    lastNonce: linkOf(last)?.nonce ?? null,
    last,
    record: recordOf(id, last, key),
    close: last.data as JsonObject,
    known,
  };
}

/** Sessions of one store write one after another per session inside this process. */
const queues = new WeakMap<SessionStore, KeyedQueue>();

function queueOf(store: SessionStore): KeyedQueue {
  let queue = queues.get(store);
  if (queue === undefined) {
    queue = new KeyedQueue();
    queues.set(store, queue);
  }
  return queue;
}

/** How often an operation is planned again after another writer won the seq. */
export const DEFAULT_CONFLICT_RETRIES = 8;

/** How one operation reads its state, plans its batch on it, and plans on what is known. */
export interface Steps<S extends Head, T> {
  /** The state of the session, read from the store in this call. */
  read: () => Promise<S>;
  /** The state as this process knows it; undefined when `known` lacks what `plan` needs. */
  fromKnown?: (known: Known) => S | undefined;
  /** Plans the batch on a state; throws to refuse the operation. */
  plan: (state: S) => Plan<T>;
}

/**
 * Plans and writes one batch to session `id`, planning again on a fresh read when another writer
 * appended first (CONFLICT) or deleted the session meanwhile (NOT_FOUND), up to `retries` times.
 *
 * On a store that checks `append(…, { after })`, a session this process knows (its last write or
 * read for a write, known-logs.ts) is planned on as known, without a read, and the append names
 * the log's last event it knows: the store refuses it (CONFLICT, nothing written) unless the log is
 * still that one, and the session is then read and planned again (a stale hint, not a lost race:
 * not counted). A plan that writes nothing, or refuses, is never decided on what is known alone:
 * the session is read and planned again first. Every other plan stands on a read of this call.
 */
export function commit<S extends Head, T>(
  store: SessionStore,
  id: string,
  steps: Steps<S, T>,
  retries = DEFAULT_CONFLICT_RETRIES,
): Promise<T> {
  return queueOf(store).run(id, async () => {
    const checked = checksAppendAfter(store);
    const known = checked ? knownLogs(store).get(id) : undefined;
    let guess = known === undefined ? undefined : unlessThrown(() => steps.fromKnown?.(known));
    for (let attempt = 0; ; ) {
      const state = guess ?? (await steps.read());
      const planned = guess === undefined ? steps.plan(state) : unlessThrown(() => steps.plan(state));
      if (planned?.batch === undefined) {
        if (planned === undefined || guess !== undefined) {
          guess = undefined; // refused, or nothing to write, on what is known: read and plan again
          continue;
        }
        if (checked && state.known !== undefined) knownLogs(store).set(id, state.known);
        return planned.result;
      }
      try {
        const last = await write(store, id, state, planned.batch, checked);
        const messages = planned.messages ?? state.known?.messages;
        if (checked) knownLogs(store).set(id, { last, ...(messages !== undefined && { messages }) });
        return planned.result;
      } catch (error) {
        if (checked) knownLogs(store).forget(id); // its outcome unknown: the log is read again
        const raced = isTidemarkError(error, 'CONFLICT') || isTidemarkError(error, 'NOT_FOUND');
        if (!raced || (guess === undefined && attempt++ >= retries)) throw error;
        guess = undefined;
      }
    }
  });
}

/**
 * `fn()`, or undefined when it throws: a hint it cannot use, or a plan refused on a state known but
 * not read, is decided again on a read.
 */
function unlessThrown<R>(fn: () => R): R | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}

/** Runs `fn` in session `id`'s queue (a delete must not overtake a write planned before it). */
export const exclusive = <T>(store: SessionStore, id: string, fn: () => Promise<T>): Promise<T> =>
  queueOf(store).run(id, fn);

/**
 * Appends `batch` after `head`, closed by an event linking it to the batch before it, and rewrites
 * the summary; returns that closing event. With `checked` (the store checks `after`), the append
 * names `head.last`, so it lands only on that log; otherwise (`head` read in this call) a read after
 * it confirms that it landed on the log it was planned on.
 * @throws TidemarkError CONFLICT when another writer appended first or the log was replaced.
 */
async function write(
  store: SessionStore,
  id: string,
  head: Head,
  batch: Batch,
  checked: boolean,
): Promise<SessionEvent> {
  const time = nowIso();
  const size = batch.events.length + 1;
  const link: Link = { nonce: randomBytes(12).toString('base64url'), prev: head.lastNonce, size };
  const close = { ...batch.close, ...link } as unknown as JsonValue;
  const events = [...batch.events, { type: CLOSE, data: close }].map((event, i) => ({
    seq: head.nextSeq + i,
    type: event.type,
    time,
    data: event.data,
  }));
  const summary = {
    ...(batch.summary.title !== undefined && { title: batch.summary.title }),
    attrs: { ...batch.summary.attrs, atEvents: head.nextSeq + size },
  };
  if (head.nextSeq === 0) {
    try {
      await store.create({ id, ...(batch.cwd !== undefined && { cwd: batch.cwd }) });
    } catch (error) {
      // Reserved by an earlier attempt here, or written by another host: the append decides.
      if (!isTidemarkError(error, 'ALREADY_EXISTS')) throw error;
    }
    await store.update(id, summary); // kept with the reservation, written with the first batch
    await store.append(id, events);
    return events[events.length - 1]!;
  }
  const after = checked ? head.last : undefined;
  if (after !== undefined) await store.append(id, events, { after });
  else {
    await store.append(id, events);
    await confirmLink(store, id, head);
  }
  await store.update(id, summary);
  return events[events.length - 1]!;
}

/**
 * Confirms that the batch just appended follows the closing event it was planned after; CONFLICT
 * (retryable, planned again by {@link commit}) when the session was deleted and written again to
 * the same length in between. Only for a store that does not check `append(…, { after })`.
 */
async function confirmLink(store: SessionStore, id: string, head: Head): Promise<void> {
  let anchor: SessionEvent | undefined;
  try {
    anchor = await eventAt(store, id, head.nextSeq - 1);
  } catch (error) {
    if (!isTidemarkError(error, 'NOT_FOUND')) throw error;
  }
  if (anchor === undefined || linkOf(anchor)?.nonce !== head.lastNonce) {
    throw new TidemarkError(
      'CONFLICT',
      `session ${id}: deleted and written again by another writer while this call was planned`,
      { sessionId: id, retryable: true },
    );
  }
}

/** True when a listed summary mirrors the last batch of its log (see the file comment). */
export const isCurrent = (summary: SessionSummary): boolean =>
  (summary.attrs as JsonObject | undefined)?.atEvents === summary.eventCount;

/** Deletes session `id`; true when it was stored. */
export async function removeSession(store: SessionStore, id: string): Promise<boolean> {
  return exclusive(store, id, async () => {
    knownLogs(store).forget(id);
    try {
      await store.delete(id);
      return true;
    } catch (error) {
      if (isTidemarkError(error, 'NOT_FOUND')) return false;
      throw error;
    }
  });
}
