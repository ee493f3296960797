// resume and fork (contract §8): continue a session where its durable log ends, or branch a new
// session off a prefix of another. Both only use the public SessionStore contract.
import { isTidemarkError, TidemarkError, toIoError } from './errors.js';
import type { SessionEvent } from './event.js';
import { type JsonValue, jsonEqual } from './json.js';
import { nowIso } from './session.js';
import type {
  LoadedSession,
  RecoveryReport,
  SessionMeta,
  SessionStore,
  SessionSummary,
  TailPolicy,
} from './store.js';
import { nextBatchSize, SessionWriter, type SessionWriterOptions } from './writer.js';

/** Default of {@link ForkOptions.copyBatchBytes}: 64 MiB. */
export const FORK_COPY_BATCH_BYTES = 64 * 1024 * 1024;

/** An event the closing hook asks to append; seq and time are filled in by the writer. */
export interface ClosingEvent {
  type: string;
  data: JsonValue;
}

/** Options of {@link resume}. */
export interface ResumeOptions {
  /** What to do with an interrupted tail: `keep` (default) returns it, `cut` quarantines it. */
  tail?: TailPolicy;
  /**
   * Called with the interrupted tail (the complete events after the last boundary) when the
   * session was interrupted and the tail is kept. The events it returns are appended durably, as
   * one atomic batch, before `resume` resolves, e.g. an error `tool/result` for each unanswered `tool/call` and a
   * `turn/end`, so that new work starts after a closed turn. Not called with `tail: 'cut'`.
   */
  closeInterruptedTurn?: (tail: SessionEvent[]) => readonly ClosingEvent[] | Promise<readonly ClosingEvent[]>;
  /** Options of the returned writer (its `nextSeq` is set by resume). */
  writer?: Omit<SessionWriterOptions, 'nextSeq'>;
}

/** The result of {@link resume}. */
export interface ResumedSession {
  meta: SessionMeta;
  /** The summary as stored after resume (after any closing events). */
  summary: SessionSummary;
  /** Every event of the log, including closing events appended by the hook. */
  history: SessionEvent[];
  /** True when the session was interrupted when resume found it (before any closing events or cut). */
  interrupted: boolean;
  /** The events appended by `closeInterruptedTurn`, as stored. */
  closingEvents: SessionEvent[];
  /** What the load repaired or cut, when it did. */
  recovered?: RecoveryReport;
  /** A writer positioned at the next seq. */
  writer: SessionWriter;
}

/**
 * Loads a session with the chosen tail policy and returns its history with a writer positioned
 * at the next seq. With `closeInterruptedTurn`, an interrupted turn is closed durably first.
 *
 * @throws TidemarkError from `load` (NOT_FOUND, CORRUPT, IO, ...) or from appending the closing
 * events; in the latter case nothing of the closing events is acknowledged.
 */
export async function resume(
  store: SessionStore,
  id: string,
  options: ResumeOptions = {},
): Promise<ResumedSession> {
  const loaded: LoadedSession = await store.load(id, { tail: options.tail ?? 'keep' });
  const wasInterrupted = loaded.interrupted || (loaded.recovered?.cutEvents ?? 0) > 0;
  let history = loaded.events;
  let summary = loaded.summary;
  const closingEvents: SessionEvent[] = [];
  if (loaded.interrupted && options.closeInterruptedTurn !== undefined) {
    const tail = loaded.events.slice(loaded.committedSeq + 1);
    const closing = await options.closeInterruptedTurn(tail.map((event) => structuredClone(event)));
    if (!Array.isArray(closing)) {
      throw new TidemarkError(
        'INVALID',
        'resume: closeInterruptedTurn must return an array of { type, data }',
        {
          sessionId: id,
        },
      );
    }
    if (closing.length > 0) {
      // One batch: the closing events land all together or not at all (append is atomic), so a
      // failed resume leaves the turn interrupted and a second resume closes it again.
      const time = nowIso();
      const batch: SessionEvent[] = closing.map((event: unknown, i) => {
        if (typeof event !== 'object' || event === null || Array.isArray(event)) {
          throw new TidemarkError(
            'INVALID',
            `resume: closeInterruptedTurn returned ${event === null ? 'null' : Array.isArray(event) ? 'an array' : typeof event} at [${i}], not a { type, data } object`,
            { sessionId: id },
          );
        }
        const { type, data } = event as ClosingEvent;
        return { seq: loaded.events.length + i, type, time, data };
      });
      try {
        await store.append(id, batch);
      } catch (error) {
        throw toIoError(error, `resume: appending the closing events of ${id}`, id);
      }
      closingEvents.push(...batch.map((event) => structuredClone(event)));
      // The summary changed with the append; reload it rather than guess the store's updatedAt.
      const reloaded = await store.load(id);
      history = reloaded.events;
      summary = reloaded.summary;
    }
  }
  const writer = new SessionWriter(store, id, { ...options.writer, nextSeq: history.length });
  const result: ResumedSession = {
    meta: loaded.meta,
    summary,
    history,
    interrupted: wasInterrupted,
    closingEvents,
    writer,
  };
  if (loaded.recovered !== undefined) result.recovered = loaded.recovered;
  return result;
}

/** Options of {@link fork}. */
export interface ForkOptions {
  /** Id of the new session; generated when omitted. */
  id?: string;
  /** Working directory of the new session; the parent's when omitted. */
  cwd?: string;
  /**
   * Most events per append while copying. Default: no limit. With the default limits the whole
   * prefix is copied in one append, so that the fork is atomic even across a crash (the child is
   * there complete, or not at all). Smaller limits bound each append, at the price that a crash
   * between two appends leaves a partial child; a failure that `fork` sees is cleaned up either way.
   */
  copyBatchEvents?: number;
  /**
   * Most serialized bytes per append while copying (a single larger event still goes alone).
   * Default 64 MiB: only a prefix larger than that is copied in several appends.
   */
  copyBatchBytes?: number;
  /** Options of the returned writer. */
  writer?: Omit<SessionWriterOptions, 'nextSeq'>;
}

/** The result of {@link fork}. */
export interface ForkedSession {
  meta: SessionMeta;
  /** The copied events 0..atSeq. */
  history: SessionEvent[];
  /** A writer positioned after the copied events. */
  writer: SessionWriter;
}

/**
 * Creates a new session whose meta names `parent: { id, seq: atSeq }` and which holds a copy of
 * the parent's events 0..atSeq (time and data unchanged). The parent is not modified.
 *
 * @throws TidemarkError INVALID when `atSeq` is not an existing seq of the parent, NOT_FOUND when
 * the parent does not exist, ALREADY_EXISTS when `options.id` is taken, IO/CORRUPT from storage.
 */
export async function fork(
  store: SessionStore,
  id: string,
  atSeq: number,
  options: ForkOptions = {},
): Promise<ForkedSession> {
  if (!Number.isSafeInteger(atSeq) || atSeq < 0) {
    throw new TidemarkError('INVALID', `fork: atSeq must be a non-negative integer, got ${String(atSeq)}`, {
      sessionId: id,
    });
  }
  const chunk = options.copyBatchEvents ?? Number.MAX_SAFE_INTEGER;
  if (!Number.isSafeInteger(chunk) || chunk < 1)
    throw new TidemarkError('INVALID', 'fork: copyBatchEvents must be ≥ 1');
  const chunkBytes = options.copyBatchBytes ?? FORK_COPY_BATCH_BYTES;
  if (!Number.isSafeInteger(chunkBytes) || chunkBytes < 1)
    throw new TidemarkError('INVALID', 'fork: copyBatchBytes must be ≥ 1');
  const parent = await store.load(id);
  if (atSeq >= parent.events.length) {
    throw new TidemarkError(
      'INVALID',
      `fork: session ${id} has no seq ${atSeq} (it holds ${parent.events.length} events)`,
      {
        sessionId: id,
      },
    );
  }
  const cwd = options.cwd ?? parent.meta.cwd;
  const meta = await store.create({
    ...(options.id !== undefined && { id: options.id }),
    ...(cwd !== undefined && { cwd }),
    parent: { id, seq: atSeq },
    ...(parent.summary.title !== undefined && { title: parent.summary.title }),
    ...(parent.summary.tags !== undefined && { tags: parent.summary.tags }),
  });
  const history = parent.events.slice(0, atSeq + 1);
  try {
    const sizes = history.map((event) => Buffer.byteLength(JSON.stringify(event), 'utf8'));
    let from = 0;
    while (from < history.length) {
      const size = nextBatchSize(sizes, chunk, chunkBytes, from);
      await store.append(meta.id, history.slice(from, from + size));
      from += size;
    }
  } catch (error) {
    await discardFailedFork(store, meta, { id, seq: atSeq }, history);
    throw toIoError(error, `fork: copying ${id} into ${meta.id}`, meta.id);
  }
  const writer = new SessionWriter(store, meta.id, { ...options.writer, nextSeq: history.length });
  return { meta, history, writer };
}

/** An `updatedAt` no appended session has: a delete guarded by it only drops a reservation. */
const NEVER_UPDATED = '1970-01-01T00:00:00.000Z';

/**
 * After a failed copy: removes what the fork left, so that it can be retried with the same id
 * and no session claims a parent prefix it does not hold. Only a child that is provably this
 * fork's (its meta is the one `create` returned, createdAt included, its events are a prefix of
 * the copy) is deleted, and only that version of it: never a same-id session another store
 * instance created meanwhile; a bare reservation is dropped. Best effort: the copy's error is what counts.
 */
async function discardFailedFork(
  store: SessionStore,
  meta: SessionMeta,
  parent: { id: string; seq: number },
  history: readonly SessionEvent[],
): Promise<void> {
  const childId = meta.id;
  try {
    let child: LoadedSession;
    try {
      child = await store.load(childId);
    } catch (error) {
      if (isTidemarkError(error, 'NOT_FOUND')) {
        await store.delete(childId, { ifUpdatedAt: NEVER_UPDATED });
      }
      return;
    }
    // Another store instance may have created and published the same id meanwhile (a reservation
    // is per instance), even as a fork of the same parent prefix: its meta has its own createdAt.
    const ours =
      child.meta.createdAt === meta.createdAt &&
      child.meta.cwd === meta.cwd &&
      child.meta.parent?.id === parent.id &&
      child.meta.parent.seq === parent.seq &&
      child.events.length <= history.length &&
      child.events.every((event, i) => {
        const copied = history[i]!;
        return (
          event.seq === copied.seq &&
          event.type === copied.type &&
          event.time === copied.time &&
          jsonEqual(event.data, copied.data)
        );
      });
    if (ours) await store.delete(childId, { ifUpdatedAt: child.summary.updatedAt });
  } catch {
    // Left as it is: the caller gets the copy's error, and a retry with a new id still works.
  }
}
