// A new process's read of a thread's newest checkpoints without folding the thread: the log's last
// event (a boundary naming, per namespace, the event of the latest checkpoint), that checkpoint's
// event and the events of its channel values (those put before it mostly as copies in its own
// batch), then the events after it (its pending writes); for `list` with a limit, the checkpoints
// before it by their `prev` pointers. Mostly one indexed lookup on SQLite and PostgreSQL (a few
// when large values lie further back), however long the thread. Whenever a pointer is missing (a log written
// before the pointers existed, another writer's events, a hashed thread id whose owner must be
// checked, a namespace that is not one chain) the answer is `undefined` and the caller folds the
// thread as before.
import type { SessionEvent, SessionStore } from '@tidemark/core';
import { ColdLog } from './cold-log.js';
import type { BlobRecord, CheckpointRecord, ThreadRecord } from './records.js';
import { ThreadState } from './thread-state.js';
import { sameSerialized } from './values.js';

export { lastEvent } from './cold-log.js';

/** What a cold read found: the thread's absence, or a state holding just the newest checkpoints of `ns`. */
export type ColdLatest = { kind: 'absent' } | { kind: 'found'; state: ThreadState; last: SessionEvent };

/**
 * Newest events read in the first lookup. A super-step of one task fits (its put: the channels it
 * changed, the checkpoint and the boundary; then its writes and their boundary); whatever of the
 * checkpoint's batch or its writes falls before is read by its pointers. Every event read is
 * decoded and checked by the store, so the window is kept small.
 */
const WINDOW = 8;

/** Events before a checkpoint its own batch's values may lie within (see {@link applyCheckpoint}). */
const NEAR_CHECKPOINT = 64;

/** Checkpoints a cold `list` walks back at most; a longer list folds the thread. */
export const MAX_COLD_LIST = 100;

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
  return readNewestCold(store, sessionId, ns, 1);
}

/**
 * The newest `limit` checkpoints of `ns` (fewer when it has fewer), each with what its tuple
 * needs, or `undefined` when the log cannot vouch for them without a fold. For more than one
 * checkpoint the namespace must be one chain (the last boundary's `chain`).
 */
export async function readNewestCold(
  store: SessionStore,
  sessionId: string,
  ns: string,
  limit: number,
): Promise<ColdLatest | undefined> {
  // The newest events in one lookup: the last batch's boundary, and mostly the latest checkpoint,
  // the channel values put with it, and its pending writes too.
  const log = await ColdLog.open(store, sessionId, WINDOW);
  if (log === null) return { kind: 'absent' };
  if (log === undefined) return undefined;
  const tail = log.record(log.last);
  if (tail?.kind !== 'boundary' || tail.latest === undefined) return undefined;
  const at = tail.latest[ns];
  if (at === undefined) return undefined;
  if (at < 0) return { kind: 'absent' };
  if (limit > 1 && !tail.chain?.includes(ns)) return undefined;
  // The checkpoint further back than the window: read from it to the window.
  let lookup = log.fetchFrom(at);
  if (lookup !== true && !(await lookup)) return undefined;
  lookup = log.fetchNear(at, log.get(at));
  if (lookup !== true && !(await lookup)) return undefined;
  const state = new ThreadState();
  const check = { unvouched: false };
  let record = await applyCheckpoint(log, state, check, ns, at, log.after(at), false);
  for (let count = 1; record !== undefined && count < limit; count += 1) {
    const { prev } = record;
    if (prev === undefined) return undefined;
    if (prev < 0) break;
    const writes = record.pw ?? [];
    // Once, from the distance between the two newest: the stretch the whole walk needs, mostly.
    if (count === 1) {
      const whole = log.fetchFrom(at - (at - prev) * limit - WINDOW);
      if (whole !== true && !(await whole)) return undefined;
    }
    // The stretch before it holds the previous checkpoint's batch and its writes, mostly.
    const stretch = log.fetchFrom(Math.min(prev, ...writes));
    if (stretch !== true && !(await stretch)) return undefined;
    const near = log.fetchNear(prev, log.get(prev));
    if (near !== true && !(await near)) return undefined;
    const pending = writes.map((seq) => log.get(seq)!);
    const older = await applyCheckpoint(log, state, check, ns, prev, pending, true);
    if (older === undefined || older.id >= record.id) return undefined;
    record = older;
  }
  if (record === undefined) return undefined;
  // Events read apart from the log's end, and not vouched for by their key, are of this log only
  // if it still ends where it did.
  if (check.unvouched && !(await log.unchanged())) return undefined;
  return { kind: 'found', state, last: log.last };
}

/**
 * Applies to `state` the checkpoint at `at`, its channel values (by its `at` pointers) and its
 * pending writes among `writes` (events after it; with `exact`, every one must be one): the
 * checkpoint record, or `undefined` when an event is not what the pointers say. Sets
 * `check.unvouched` when an event applied was read apart from the log's end and carries no key
 * that the checkpoint names.
 */
async function applyCheckpoint(
  log: ColdLog,
  state: ThreadState,
  check: { unvouched: boolean },
  ns: string,
  at: number,
  writes: readonly SessionEvent[],
  exact: boolean,
): Promise<CheckpointRecord | undefined> {
  const head = log.get(at);
  const parsed = head === undefined ? undefined : log.record(head);
  if (parsed?.kind !== 'checkpoint' || parsed.checkpoint.ns !== ns || parsed.checkpoint.at === undefined)
    return undefined;
  const record = parsed.checkpoint;
  const valueAt = record.at ?? {};
  const pointed = [...Object.values(valueAt), ...(record.wat ?? [])];
  // Values without a key (those of the checkpoint's own batch) are read with the stretch up to the
  // log's end; keyed ones put long before, on their own.
  // Values just before it (keyed or not) are read with the stretch up to the log's end too: one
  // lookup from the end, where a single one in the middle of the log may cost a scan (JSONL).
  const near = Object.values(valueAt).filter((seq) => seq < at && at - seq <= NEAR_CHECKPOINT);
  // Each lookup awaited only when one is made: `await` of a plain `true` still makes a promise and
  // a turn of the microtask queue (and LangGraph runs with async hooks on, which see each one).
  if (near.length > 0) {
    const stretch = log.fetchFrom(Math.min(...near));
    if (stretch !== true && !(await stretch)) return undefined;
  }
  const values = log.fetch(pointed);
  if (values !== true && !(await values)) return undefined;
  const before = [...new Set(pointed)].filter((seq) => seq < at).map((seq) => log.get(seq)!);
  for (const event of [...before.sort((a, b) => a.seq - b.seq), head!]) {
    const found = log.record(event);
    if (found === undefined || !belongs(found, ns, record.id, event.seq === at)) continue;
    state.apply(found, event.seq);
  }
  const ahead = new Set(record.wat ?? []);
  for (const event of writes) {
    const found = log.record(event);
    if (found !== undefined && belongs(found, ns, record.id, false)) {
      // Writes stored ahead of the checkpoint's put were applied with it (its `wat`).
      if (ahead.has(event.seq)) continue;
      if (log.isLoose(event.seq)) check.unvouched = true;
      state.apply(found, event.seq);
    } else if (exact) return undefined;
  }
  // Each pointed value must be the one the checkpoint names (a log rewritten between the lookups
  // would point elsewhere, or hold another value there): else fold.
  for (const [ch, seq] of Object.entries(valueAt)) {
    const kept = state.channelBlob(ns, record, ch);
    if (kept === undefined) return undefined;
    // A newer checkpoint's copy of the same version may have been applied first (a walk back;
    // see CARRY_BUDGET in batch-index.ts): the blob named here must then be a copy of it.
    const blob = state.seqOf(kept) === seq ? kept : copyAt(log, seq, kept);
    if (blob === undefined) return undefined;
    const key = record.ak?.[ch];
    if (key !== undefined && blob.k !== key) return undefined;
    if (key === undefined && log.isLoose(seq)) check.unvouched = true;
  }
  for (const seq of record.wat ?? []) if (log.isLoose(seq)) check.unvouched = true;
  return record;
}

/** The blob at `seq` when it holds the same version and value as `kept`, else `undefined`. */
function copyAt(log: ColdLog, seq: number, kept: BlobRecord): BlobRecord | undefined {
  const event = log.get(seq);
  const found = event === undefined ? undefined : log.record(event);
  if (found?.kind !== 'blob') return undefined;
  const { blob } = found;
  const same =
    blob.ns === kept.ns &&
    blob.ch === kept.ch &&
    blob.ver === kept.ver &&
    blob.owner === kept.owner &&
    sameSerialized(blob.value, kept.value);
  return same ? blob : undefined;
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
