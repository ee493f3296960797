// Reading and writing the tidemark sessions behind Mastra's records. Every Mastra write is one
// batch appended at the seq this very call read, closed by a boundary event that carries the
// record as it stands after the batch; a batch that lost the seq to another writer (CONFLICT) is
// planned again on a fresh read, so no write rests on what an earlier call saw. The session's
// summary (title, attrs) mirrors the record for `list` and is rewritten in full after every batch,
// with the event count the log has after the batch (`atEvents`): a summary whose count is not the
// store's own `eventCount` was left behind by a call that failed after its batch landed, and a
// reader goes to the log instead (see `isCurrent`).
import { randomBytes } from 'node:crypto';
import {
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

/**
 * The head of session `id` and the record `key` of its last linked batch, read from the log's end:
 * the last event, and the closing event before its batch to check the link (more only after a
 * batch that did not link, see {@link Link}). `record` is undefined when the session is not stored;
 * `close` is the whole data of that closing event.
 */
export async function readHead(
  store: SessionStore,
  id: string,
  key: string,
): Promise<Head & { record: JsonObject | undefined; close: JsonObject | undefined }> {
  const last = (await readLast(store, id, 1))[0];
  if (last === undefined) return { nextSeq: 0, lastNonce: null, record: undefined, close: undefined };
  const head = { nextSeq: last.seq + 1, lastNonce: linkOf(last)?.nonce ?? null };
  try {
    let close: SessionEvent | undefined = last;
    while (close !== undefined) {
      const link = linkOf(close);
      if (link === undefined) throw notOurs(id, close, 'not the closing event of a Mastra batch');
      const before = close.seq - link.size;
      if (before < 0) return { ...head, record: recordOf(id, close, key), close: close.data as JsonObject };
      const previous = await eventAt(store, id, before);
      if (previous === undefined)
        throw notOurs(id, close, `no closing event at seq ${before} before this batch`);
      if (linkOf(previous)?.nonce === link.prev)
        return { ...head, record: recordOf(id, close, key), close: close.data as JsonObject };
      close = previous; // a batch planned on an earlier log: the record is the one before it
    }
  } catch (error) {
    if (isTidemarkError(error, 'NOT_FOUND'))
      return { nextSeq: 0, lastNonce: null, record: undefined, close: undefined };
    throw error;
  }
  return { ...head, record: undefined, close: undefined };
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

/**
 * Reads, plans and writes one batch to session `id`, planning again on a fresh read when another
 * writer appended first (CONFLICT) or deleted the session meanwhile (NOT_FOUND), up to `retries`
 * times. A plan that writes nothing stands on the read of this very call.
 */
export function commit<S extends Head, T>(
  store: SessionStore,
  id: string,
  read: () => Promise<S>,
  plan: (state: S) => Plan<T>,
  retries = DEFAULT_CONFLICT_RETRIES,
): Promise<T> {
  return queueOf(store).run(id, async () => {
    for (let attempt = 0; ; attempt++) {
      const state = await read();
      const planned = plan(state);
      if (planned.batch === undefined) return planned.result;
      try {
        await write(store, id, state, planned.batch);
        return planned.result;
      } catch (error) {
        const raced = isTidemarkError(error, 'CONFLICT') || isTidemarkError(error, 'NOT_FOUND');
        if (!raced || attempt >= retries) throw error;
      }
    }
  });
}

/** Runs `fn` in session `id`'s queue (a delete must not overtake a write planned before it). */
export const exclusive = <T>(store: SessionStore, id: string, fn: () => Promise<T>): Promise<T> =>
  queueOf(store).run(id, fn);

async function write(store: SessionStore, id: string, head: Head, batch: Batch): Promise<void> {
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
    return;
  }
  await store.append(id, events);
  await confirmLink(store, id, head);
  await store.update(id, summary);
}

/**
 * Confirms that the batch just appended follows the closing event it was planned after; CONFLICT
 * (retryable, planned again by {@link commit}) when the session was deleted and written again to
 * the same length in between.
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
    try {
      await store.delete(id);
      return true;
    } catch (error) {
      if (isTidemarkError(error, 'NOT_FOUND')) return false;
      throw error;
    }
  });
}
