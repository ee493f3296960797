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
  // The newest events in one lookup: the last batch's boundary, and mostly the latest checkpoint,
  // the channel values put with it, and its pending writes too.
  const window = await lastEvents(store, sessionId, WINDOW);
  if (window === null) return { kind: 'absent' };
  const last = window[window.length - 1];
  if (last === undefined) return undefined;
  const tail = parseRecord(sessionId, last);
  if (tail?.kind !== 'boundary' || tail.latest === undefined) return undefined;
  const at = tail.latest[ns];
  if (at === undefined) return undefined;
  if (at < 0) return { kind: 'absent' };
  let after = window.filter((event) => event.seq >= at);
  if (window[0]!.seq > at) {
    // The checkpoint is further back: read from it up to the window, then make sure the log is
    // still the one whose last event named it (not deleted and rewritten meanwhile).
    const between = await readRange(store, sessionId, at, window[0]!.seq - 1);
    if (between === undefined || !(await stillLast(store, sessionId, last))) return undefined;
    after = [...between, ...after];
  }
  const head = after[0];
  const checkpoint = head?.seq === at ? parseRecord(sessionId, head) : undefined;
  if (
    checkpoint?.kind !== 'checkpoint' ||
    checkpoint.checkpoint.ns !== ns ||
    checkpoint.checkpoint.at === undefined
  )
    return undefined;
  const record = checkpoint.checkpoint;
  const valueAt = record.at ?? {};
  const inHand = new Map(window.map((event) => [event.seq, event]));
  const pointed = [...Object.values(valueAt), ...(record.wat ?? [])];
  const fetched = await readSeqs(
    store,
    sessionId,
    pointed.filter((seq) => !inHand.has(seq)),
  );
  if (fetched === undefined) return undefined;
  const before = [
    ...fetched,
    ...pointed.flatMap((seq) => (seq < at && inHand.has(seq) ? [inHand.get(seq)!] : [])),
  ];
  const state = new ThreadState();
  for (const event of [...before.sort((a, b) => a.seq - b.seq), ...after]) {
    const parsed = parseRecord(sessionId, event);
    if (parsed === undefined || !belongs(parsed, ns, record.id, event.seq === at)) continue;
    state.apply(parsed, event.seq);
  }
  // Each pointed value must be the one the checkpoint names (a log rewritten between the lookups
  // would point elsewhere): else fold.
  for (const [ch, seq] of Object.entries(valueAt)) {
    const blob = state.channelBlob(ns, record, ch);
    if (blob === undefined || state.seqOf(blob) !== seq) return undefined;
  }
  return { kind: 'found', state, last };
}

/** Newest events read in the first lookup: a step's batches (values, checkpoint, writes) fit. */
const WINDOW = 24;

/** True when the log's last event is still `last`. */
async function stillLast(store: SessionStore, sessionId: string, last: SessionEvent): Promise<boolean> {
  const now = await lastEvent(store, sessionId);
  return now?.seq === last.seq && now.time === last.time && now.type === last.type && sameData(now, last);
}

function sameData(a: SessionEvent, b: SessionEvent): boolean {
  return JSON.stringify(a.data) === JSON.stringify(b.data);
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

/** The last `n` events of the log, `null` when the session does not exist. */
async function lastEvents(store: SessionStore, sessionId: string, n: number): Promise<SessionEvent[] | null> {
  const events: SessionEvent[] = [];
  try {
    for await (const event of store.read(sessionId, { last: n })) events.push(event);
  } catch (error) {
    if (isTidemarkError(error, 'NOT_FOUND')) return null;
    throw error;
  }
  return events;
}

/** The log's last event (one indexed lookup on SQLite and PostgreSQL), `null` when the session does not exist. */
export async function lastEvent(
  store: SessionStore,
  sessionId: string,
): Promise<SessionEvent | null | undefined> {
  let last: SessionEvent | undefined;
  try {
    for await (const event of store.read(sessionId, { last: 1 })) last = event;
  } catch (error) {
    if (isTidemarkError(error, 'NOT_FOUND')) return null;
    throw error;
  }
  return last;
}
