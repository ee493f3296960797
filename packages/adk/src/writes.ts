// appendEvent's write to the session's own log: one batch, planned on a read of the log's end in
// the same call and placed by the append's seq check. On a store that checks
// `append(…, { after })`, the append also names the closing event that read found, so a log
// deleted and written again to the same length between the read and the append (which passes the
// seq check) refuses the batch instead of taking a snapshot or replacement planned on the old log.
// A writer that lost the seq, or whose log changed under it, reads again and plans anew.
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import {
  checksAppendAfter,
  isTidemarkError,
  type SessionEvent,
  type SessionStore,
  TidemarkError,
} from '@tidemark/core';
import type { LogKey } from './keys.js';
import {
  ADK_EVENT,
  type Closing,
  closingOf,
  headerOf,
  isOwnKey,
  type JsonObject,
  ownCopy,
  type SessionHeader,
  SNAPSHOT_EVERY,
  type StoredEvent,
  setOwn,
  stateFromSnapshot,
  stateOfWholeLog,
} from './records.js';
import { type LogHead, readHead, readRange } from './session-log.js';

/** A state delta split by where each key is kept (prefixes taken off the shared ones). */
export interface SplitDelta {
  app: JsonObject;
  user: JsonObject;
  own: JsonObject;
}

/** Splits a state (or delta) into app, user and the session's own keys; `temp:` keys are dropped. */
export function splitDelta(delta: JsonObject): SplitDelta {
  const out: SplitDelta = { app: ownCopy(undefined), user: ownCopy(undefined), own: ownCopy(undefined) };
  for (const [key, value] of Object.entries(delta)) {
    if (key.startsWith('app:')) setOwn(out.app, key.slice(4), value);
    else if (key.startsWith('user:')) setOwn(out.user, key.slice(5), value);
    else if (isOwnKey(key)) setOwn(out.own, key, value);
  }
  return out;
}

/** Appends `event` to the session's log as one batch. NOT_FOUND when the session is not stored. */
export async function appendToSession(
  store: SessionStore,
  log: LogKey,
  event: StoredEvent,
  options: { known: boolean; maxConflictRetries: number },
): Promise<void> {
  const checked = checksAppendAfter(store);
  for (let attempt = 0; ; attempt++) {
    const head = await readHead(store, log);
    if (head === undefined)
      throw new TidemarkError('NOT_FOUND', `appendEvent: session ${log.id} is not stored`, {
        sessionId: log.id,
      });
    const last = head.lastEvent;
    // A retry of an append whose answer was lost finds its event at the end: nothing to write.
    if (last !== undefined && last.event.id === event.id && isDeepStrictEqual(last.event, event)) return;
    const batch = await planBatch(store, log, head, event, options.known);
    try {
      // Checked: the batch lands only if the log still ends with the event this call read (every
      // read of the plan, for a replacement or a snapshot, stopped at that event).
      if (checked) await store.append(log.id, batch, { after: head.last });
      else await store.append(log.id, batch);
      return;
    } catch (error) {
      if (!isTidemarkError(error, 'CONFLICT')) throw error;
      if (attempt >= options.maxConflictRetries)
        throw new TidemarkError(
          'CONFLICT',
          `appendEvent: other writers won the race for session ${log.id} ${attempt + 1} times`,
          {
            sessionId: log.id,
            retryable: true,
            cause: error,
          },
        );
    }
  }
}

async function planBatch(
  store: SessionStore,
  log: LogKey,
  head: LogHead,
  event: StoredEvent,
  known: boolean,
): Promise<SessionEvent[]> {
  const time = new Date().toISOString();
  let seq = head.seq + 1;
  const last = head.lastEvent;
  const replaces =
    last !== undefined && last.event.id === event.id
      ? (last.replaces ?? last.seq)
      : known
        ? await findStored(store, log, event.id, head.seq)
        : undefined;
  const batch: SessionEvent[] = [
    {
      seq: seq++,
      type: ADK_EVENT.event,
      time,
      data: { event: event as unknown as JsonObject, ...(replaces !== undefined && { replaces }) },
    },
  ];
  let snapshotSeq = head.closing.snapshotSeq;
  let sinceSnapshot = (head.closing.sinceSnapshot ?? 0) + 1;
  if (sinceSnapshot >= SNAPSHOT_EVERY) {
    const state = await stateAt(store, log, head);
    for (const [key, value] of Object.entries(event.actions?.stateDelta ?? {}))
      if (isOwnKey(key)) setOwn(state, key, value);
    snapshotSeq = seq;
    sinceSnapshot = 0;
    batch.push({ seq: seq++, type: ADK_EVENT.snapshot, time, data: { state, basedOn: head.closing.nonce } });
  }
  const closing: Closing = {
    lastUpdateTime: event.timestamp,
    snapshotSeq,
    sinceSnapshot,
    nonce: randomUUID(),
  };
  batch.push({ seq, type: ADK_EVENT.end, time, data: { ...closing } });
  return batch;
}

/** The session's own state as of `head`: from its snapshot, or the whole log when that does not check out. */
async function stateAt(
  store: SessionStore,
  log: LogKey,
  head: { closing: Closing; seq: number },
): Promise<JsonObject> {
  const fromSeq = Math.max(0, head.closing.snapshotSeq - 2);
  const tail = (await readRange(store, log.id, { fromSeq })) ?? [];
  const upToHead = tail.filter((e) => e.seq <= head.seq);
  const last = upToHead[upToHead.length - 1];
  const state = last === undefined ? undefined : stateFromSnapshot(upToHead, closingOf(last, log.id));
  if (state !== undefined) return state;
  const whole = ((await readRange(store, log.id, {})) ?? []).filter((e) => e.seq <= head.seq);
  const first = whole[0];
  if (first === undefined) return ownCopy(undefined);
  const header = first.data as unknown as SessionHeader;
  return stateOfWholeLog(whole, headerOf(first, log.id, header));
}

/** The seq of the stored event with `eventId` (not a replacement), searching from the newest. */
async function findStored(
  store: SessionStore,
  log: LogKey,
  eventId: string,
  lastSeq: number,
): Promise<number | undefined> {
  let count = 16;
  for (;;) {
    const events = (await readRange(store, log.id, { last: Math.min(count, lastSeq + 1) })) ?? [];
    for (let i = events.length - 1; i >= 0; i--) {
      const record = events[i]!;
      if (record.seq > lastSeq || record.type !== ADK_EVENT.event) continue;
      const data = record.data as { event?: { id?: unknown }; replaces?: number };
      if (data.event?.id === eventId) return data.replaces ?? record.seq;
    }
    if (events.length === 0 || events[0]!.seq === 0) return undefined;
    count *= 4;
  }
}
