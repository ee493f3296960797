// A new process's read of a thread's latest checkpoint without folding the thread: the log's last
// event (a boundary naming, per namespace, the event of the latest checkpoint), that checkpoint's
// event and the events of its channel values, then the events after it (its pending writes). A few
// indexed lookups on SQLite and PostgreSQL, however long the thread. Whenever a pointer is missing
// (a log written before the pointers existed, another writer's events, a hashed thread id whose
// owner must be checked) the answer is `undefined` and the caller folds the thread as before.
import { isTidemarkError, type SessionEvent, type SessionStore } from '@tidemark/core';
import { parseRecord, type ThreadRecord } from './records.js';
import { ThreadState } from './thread-state.js';

/** What a cold read found: the thread's absence, or a state holding just the latest checkpoint of `ns`. */
export type ColdLatest = { kind: 'absent' } | { kind: 'found'; state: ThreadState; last: SessionEvent };

/**
 * The latest checkpoint of `ns` and what its tuple needs, or `undefined` when the log does not
 * carry the pointers (fold it instead). `absent` when the session does not exist, or the
 * namespace has no checkpoint.
 */
export async function readLatestCold(
  store: SessionStore,
  sessionId: string,
  ns: string,
): Promise<ColdLatest | undefined> {
  const last = await lastEvent(store, sessionId);
  if (last === null) return { kind: 'absent' };
  if (last === undefined) return undefined;
  const tail = parseRecord(sessionId, last);
  if (tail?.kind !== 'boundary' || tail.latest === undefined) return undefined;
  const at = tail.latest[ns];
  if (at === undefined) return undefined;
  if (at < 0) return { kind: 'absent' };
  // The checkpoint and every event after it (its later pending writes), up to the last one seen.
  const after = await readRange(store, sessionId, at, last.seq);
  const head = after?.[0];
  const checkpoint = head === undefined ? undefined : parseRecord(sessionId, head);
  if (
    checkpoint?.kind !== 'checkpoint' ||
    checkpoint.checkpoint.ns !== ns ||
    checkpoint.checkpoint.at === undefined
  )
    return undefined;
  // The log must still be the one whose last event named it (not deleted and rewritten meanwhile).
  const seen = after?.[after.length - 1];
  if (seen === undefined || seen.seq !== last.seq || seen.time !== last.time || seen.type !== last.type)
    return undefined;
  const pointed = [...Object.values(checkpoint.checkpoint.at), ...(checkpoint.checkpoint.wat ?? [])];
  const before = await readSeqs(store, sessionId, pointed);
  if (before === undefined) return undefined;
  const state = new ThreadState();
  for (const event of [...before, ...after!]) {
    const record = parseRecord(sessionId, event);
    if (record === undefined || !belongs(record, ns, checkpoint.checkpoint.id, event.seq === at)) continue;
    state.apply(record, event.seq);
  }
  return { kind: 'found', state, last };
}

/** The records a tuple of checkpoint `id` needs: its channel values, itself, and its pending writes. */
function belongs(record: ThreadRecord, ns: string, id: string, isCheckpoint: boolean): boolean {
  switch (record.kind) {
    case 'blob':
      return record.blob.ns === ns;
    case 'checkpoint':
      return isCheckpoint;
    case 'writes':
      return record.writes.ns === ns && record.writes.cp === id;
    case 'boundary':
      return false;
  }
}

/** The events at `seqs` (ascending, once each); `undefined` when one is missing. */
async function readSeqs(
  store: SessionStore,
  sessionId: string,
  seqs: readonly number[],
): Promise<SessionEvent[] | undefined> {
  const wanted = [...new Set(seqs)].sort((a, b) => a - b);
  const events: SessionEvent[] = [];
  // Neighbouring seqs are read as one range (a step's channel values sit side by side).
  for (let i = 0; i < wanted.length; ) {
    let j = i;
    while (j + 1 < wanted.length && wanted[j + 1]! - wanted[j]! <= 4) j += 1;
    const range = await readRange(store, sessionId, wanted[i]!, wanted[j]!);
    if (range === undefined) return undefined;
    const keep = new Set(wanted.slice(i, j + 1));
    const found = range.filter((e) => keep.has(e.seq));
    if (found.length !== keep.size) return undefined;
    events.push(...found);
    i = j + 1;
  }
  return events;
}

/** Events `fromSeq`..`toSeq`; `undefined` when the session is gone. */
async function readRange(
  store: SessionStore,
  sessionId: string,
  fromSeq: number,
  toSeq: number,
): Promise<SessionEvent[] | undefined> {
  const events: SessionEvent[] = [];
  try {
    for await (const event of store.read(sessionId, { fromSeq, toSeq })) events.push(event);
  } catch (error) {
    if (isTidemarkError(error, 'NOT_FOUND')) return undefined;
    throw error;
  }
  return events;
}

/** The log's last event (one indexed lookup on SQLite and PostgreSQL), `null` when the session does not exist. */
async function lastEvent(store: SessionStore, sessionId: string): Promise<SessionEvent | null | undefined> {
  let last: SessionEvent | undefined;
  try {
    for await (const event of store.read(sessionId, { last: 1 })) last = event;
  } catch (error) {
    if (isTidemarkError(error, 'NOT_FOUND')) return null;
    throw error;
  }
  return last;
}
