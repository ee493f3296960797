// Reading and writing the tidemark sessions behind Mastra's records. Every Mastra write is one
// batch appended at the seq this very call read, closed by a boundary event that carries the
// record as it stands after the batch; a batch that lost the seq to another writer (CONFLICT) is
// planned again on a fresh read, so no write rests on what an earlier call saw. The session's
// summary (title, attrs) mirrors the record for `list` and is rewritten in full after every batch.
import {
  isTidemarkError,
  type JsonValue,
  KeyedQueue,
  nowIso,
  type SessionEvent,
  type SessionStore,
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

/** A read of a session: where the next batch goes, and what the plan needs. */
export interface Head {
  nextSeq: number;
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

/** The record carried by the last closing event of `events`, or undefined when there is none. */
export function lastRecord(id: string, events: readonly SessionEvent[], key: string): JsonObject | undefined {
  const last = events[events.length - 1];
  if (last === undefined) return undefined;
  const data = last.data as JsonObject | null;
  const record = last.type === CLOSE && data !== null && typeof data === 'object' ? data[key] : undefined;
  if (record === undefined || record === null || typeof record !== 'object' || Array.isArray(record)) {
    throw new TidemarkError(
      'CORRUPT',
      `session ${id}, event ${last.seq}: not the close of a Mastra ${key} batch`,
      {
        sessionId: id,
        location: { seq: last.seq },
      },
    );
  }
  return record;
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
        await write(store, id, state.nextSeq, planned.batch);
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

async function write(store: SessionStore, id: string, nextSeq: number, batch: Batch): Promise<void> {
  const time = nowIso();
  const events = [...batch.events, { type: CLOSE, data: batch.close }].map((event, i) => ({
    seq: nextSeq + i,
    type: event.type,
    time,
    data: event.data,
  }));
  const summary = {
    ...(batch.summary.title !== undefined && { title: batch.summary.title }),
    attrs: batch.summary.attrs,
  };
  if (nextSeq === 0) {
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
  await store.update(id, summary);
}

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
