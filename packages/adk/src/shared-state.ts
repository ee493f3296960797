// The state an app's sessions share (`app:` keys) and a user's sessions share (`user:` keys), each
// a tidemark session of its own: a log of whole states, one event per write, newest last. A read is
// the last event alone; a write reads it, merges its delta and appends at the next seq, so two
// writers racing on one app are told apart by the append's seq check (the loser reads again and
// merges onto the winner's state: no acknowledged key is lost to a racing write). On a store that
// checks `append(…, { after })` the write also names the event it merged onto, so a log deleted and
// written again to the same length meanwhile refuses the merge too, instead of taking it over.
import {
  checksAppendAfter,
  errors,
  isTidemarkError,
  type SessionEvent,
  type SessionStore,
} from '@tidemark/core';
import type { LogKey } from './keys.js';
import { ADK_EVENT, type JsonObject, ownCopy, setOwn } from './records.js';

/** Attempts of a write that keeps losing races to other writers, before it rejects with CONFLICT. */
const MAX_ATTEMPTS = 16;
/**
 * Longest wait between attempts. A racing seq is settled at once, but a JSONL log another process
 * wrote last stays locked to it until that writer goes idle (250 ms by default): every app's
 * sessions write its one shared log, so a writer waits for the lock instead of failing the event.
 */
const MAX_BACKOFF_MS = 400;

const pause = (attempt: number) =>
  new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(MAX_BACKOFF_MS, 10 * 2 ** attempt)));

/** The latest shared state of a log, and the seq its next write goes to. */
export interface SharedHead {
  state: JsonObject;
  nextSeq: number;
  /** The event the state was read from, whole (undefined when nothing was ever written). */
  last?: SessionEvent;
}

/** The shared state kept in `log` (empty when nothing was ever written). */
export async function readShared(store: SessionStore, log: LogKey): Promise<SharedHead> {
  try {
    let head: SharedHead = { state: ownCopy(undefined), nextSeq: 0 };
    for await (const event of store.read(log.id, { last: 1 })) {
      const state = (event.data as { state?: unknown } | null)?.state;
      if (typeof state !== 'object' || state === null || Array.isArray(state))
        throw errors.corrupt(
          `shared state ${log.id}: the event at seq ${event.seq} holds no state`,
          { seq: event.seq },
          log.id,
        );
      head = { state: ownCopy(state as JsonObject), nextSeq: event.seq + 1, last: event };
    }
    return head;
  } catch (error) {
    if (isTidemarkError(error, 'NOT_FOUND')) return { state: ownCopy(undefined), nextSeq: 0 };
    throw error;
  }
}

/** Merges `delta` (keys without their prefix) into the shared state of `log`. */
export async function writeShared(
  store: SessionStore,
  log: LogKey,
  delta: JsonObject,
  label: { scope: 'app' | 'user'; appName: string; userId?: string },
): Promise<void> {
  const checked = checksAppendAfter(store);
  for (let attempt = 1; ; attempt++) {
    const head = await readShared(store, log);
    const state = head.state;
    for (const [key, value] of Object.entries(delta)) setOwn(state, key, value);
    const event = {
      seq: head.nextSeq,
      type: ADK_EVENT.end,
      time: new Date().toISOString(),
      data: {
        adk: `${label.scope}-state`,
        appName: label.appName,
        ...(label.userId !== undefined && { userId: label.userId }),
        state,
      },
    };
    try {
      if (head.nextSeq === 0) await createOnce(store, log);
      if (checked && head.last !== undefined) await store.append(log.id, [event], { after: head.last });
      else await store.append(log.id, [event]);
      return;
    } catch (error) {
      // Another writer took this seq, materialized the log first, or (checked) replaced the state
      // this write merged onto: read its state and merge again.
      if (!isTidemarkError(error, 'CONFLICT') || attempt >= MAX_ATTEMPTS) throw error;
      if (attempt > 1) await pause(attempt);
    }
  }
}

/** Reserves the log's id in this store instance; a reservation or a log already there is fine. */
async function createOnce(store: SessionStore, log: LogKey): Promise<void> {
  try {
    await store.create({ id: log.id, cwd: log.cwd });
  } catch (error) {
    if (!isTidemarkError(error, 'ALREADY_EXISTS')) throw error;
  }
}
