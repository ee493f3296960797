// Copying a session between two stores: the building block of trash, restore and migrate. It is
// resumable (a copy cut short continues from the target's next seq) and verified (sha256 of the
// canonical JSON of every event, compared after copying).
import { createHash } from 'node:crypto';
import {
  type CreateInit,
  type JsonValue,
  type SessionEvent,
  type SessionStore,
  type SessionSummary,
  type SummaryPatch,
  TidemarkError,
} from '@tidemark/core';

/**
 * JSON with object keys sorted at every level: the same value always gives the same text,
 * whatever order its keys were written in. Pure.
 */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k] as JsonValue)}`).join(',')}}`;
}

/** sha256 (hex) of the canonical JSON of an event. */
export function eventHash(event: SessionEvent): string {
  const { seq, type, time, data } = event;
  return createHash('sha256').update(canonicalJson({ seq, type, time, data })).digest('hex');
}

/** One hash over a whole log: sha256 of the event hashes joined by newlines. */
export function logHash(eventHashes: readonly string[]): string {
  return createHash('sha256').update(eventHashes.join('\n')).digest('hex');
}

/** What a copy has to do, given the hashes of the source and of what the target already holds. */
export type CopyPlan =
  | { kind: 'complete' }
  | { kind: 'continue'; fromSeq: number }
  | { kind: 'diverged'; atSeq: number };

/**
 * Decides a copy from event hashes. Pure. The target must be a prefix of the source: equal →
 * complete; shorter → continue from its length; any difference or a longer target → diverged.
 */
export function planCopy(source: readonly string[], target: readonly string[]): CopyPlan {
  const n = Math.min(source.length, target.length);
  for (let i = 0; i < n; i++) if (source[i] !== target[i]) return { kind: 'diverged', atSeq: i };
  if (target.length > source.length) return { kind: 'diverged', atSeq: source.length };
  if (target.length === source.length) return { kind: 'complete' };
  return { kind: 'continue', fromSeq: target.length };
}

/** Options of {@link copySession}. */
export interface CopyOptions {
  /** Events per append. Default 512. */
  batchEvents?: number;
  /** Rewrites the `attrs` the copy gets (default: the source's attrs unchanged). */
  attrs?: (source: SessionSummary['attrs']) => SessionSummary['attrs'];
  /** Called after each batch lands with the number of events present in the target. */
  onProgress?: (copied: number, total: number) => void;
  /** The source's summary, if the caller has it (from `list`): saves loading the session. */
  sourceSummary?: SessionSummary;
}

/** The outcome of {@link copySession}. */
export interface CopyResult {
  id: string;
  /** Events in the source (and now in the target). */
  events: number;
  /** Events appended by this call (0 when the target was already complete). */
  appended: number;
  /** `complete` (nothing to do), `resumed` (continued a partial copy) or `copied` (new). */
  outcome: 'complete' | 'resumed' | 'copied';
  /** {@link logHash} of the events, equal in both stores (verified by reading the target back). */
  hash: string;
  /** The source's summary as read before copying (its original `createdAt` and `updatedAt`). */
  source: SessionSummary;
}

async function readAll(store: SessionStore, id: string): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  for await (const event of store.read(id)) out.push(event);
  return out;
}

/**
 * Copies session `id` from `from` to `to` with its meta (cwd, parent), summary fields (title,
 * tags, firstPrompt, attrs) and byte-identical events, then verifies the target by reading it
 * back and comparing counts and content hashes.
 *
 * The source is only read: events are streamed through `read()` in batches (memory bounded by
 * `batchEvents`, plus one hash per event), so a copy never repairs or otherwise changes the
 * source. Pass `sourceSummary` when you have it (from `list`) to avoid loading the session.
 *
 * The copy keeps the source's `createdAt`; its `updatedAt` is the time of the copy.
 *
 * @throws TidemarkError CONFLICT when the target holds a session with this id whose events are
 * not a prefix of the source's; CORRUPT when the verification fails; INVALID for a source without
 * events (it cannot exist in the target); any error of either store.
 */
export async function copySession(
  from: SessionStore,
  to: SessionStore,
  id: string,
  options: CopyOptions = {},
): Promise<CopyResult> {
  const summary = options.sourceSummary ?? (await from.load(id)).summary;
  const targetHashes = (await to.has(id)) ? (await readAll(to, id)).map(eventHash) : undefined;
  const patch = copiedFields(summary, options);
  let created = targetHashes !== undefined;
  const fromSeq = targetHashes?.length ?? 0;
  const expected = Math.max(summary.eventCount, fromSeq);
  const sourceHashes = await appendMissing(
    from,
    id,
    targetHashes,
    options.batchEvents ?? 512,
    async (batch) => {
      if (!created) await createTarget(to, id, summary, patch);
      created = true;
      await to.append(id, batch);
      options.onProgress?.(batch[batch.length - 1]!.seq + 1, expected);
    },
  );
  const total = sourceHashes.length;
  if (total === 0 && targetHashes === undefined) {
    // create() is lazy: a session exists from its first event, so an empty one (left by a tail
    // cut or a repair) has no way into another store. Said plainly rather than as NOT_FOUND.
    throw new TidemarkError(
      'INVALID',
      `session ${id} has no events: a store holds a session only from its first event, so it cannot be copied`,
      { sessionId: id },
    );
  }
  if (targetHashes !== undefined && targetHashes.length > total) throw diverged(id, total);
  const outcome: CopyResult['outcome'] =
    targetHashes === undefined ? 'copied' : targetHashes.length === total ? 'complete' : 'resumed';
  // A target that existed already gets the summary fields now (e.g. the trash record).
  if (targetHashes !== undefined && Object.keys(patch).length > 0) await to.update(id, patch);
  const hash = await verifyCopy(to, id, sourceHashes);
  return { id, events: total, appended: total - fromSeq, outcome, hash, source: summary };
}

/** The target already holds other events than the source from `atSeq` on. */
function diverged(id: string, atSeq: number): TidemarkError {
  return new TidemarkError(
    'CONFLICT',
    `session ${id}: the target already holds different events (from seq ${atSeq})`,
    { sessionId: id },
  );
}

/** Summary fields `create` cannot take, set with `update` (kept by the store for the first batch). */
function copiedFields(summary: SessionSummary, options: CopyOptions): SummaryPatch {
  const attrs = options.attrs === undefined ? summary.attrs : options.attrs(summary.attrs);
  const patch: SummaryPatch = {};
  if (summary.firstPrompt !== undefined) patch.firstPrompt = summary.firstPrompt;
  if (attrs !== undefined) patch.attrs = attrs;
  return patch;
}

/** Reserves the copy with the source's header fields, so it appears with them on its first batch. */
async function createTarget(
  to: SessionStore,
  id: string,
  summary: SessionSummary,
  patch: SummaryPatch,
): Promise<void> {
  const init: CreateInit = { id, createdAt: summary.createdAt };
  if (summary.cwd !== undefined) init.cwd = summary.cwd;
  if (summary.parent !== undefined) init.parent = summary.parent;
  if (summary.title !== undefined) init.title = summary.title;
  if (summary.tags !== undefined) init.tags = summary.tags;
  try {
    await to.create(init);
  } catch (error) {
    // Pending in this very instance from an earlier attempt that failed before its first batch.
    if (!(error instanceof TidemarkError && error.code === 'ALREADY_EXISTS')) throw error;
  }
  if (Object.keys(patch).length > 0) await to.update(id, patch);
}

/**
 * Streams the source's events, checks the ones the target already holds against `targetHashes`,
 * and hands the rest to `append` in batches of `chunk`. Returns the hash of every source event.
 */
async function appendMissing(
  from: SessionStore,
  id: string,
  targetHashes: string[] | undefined,
  chunk: number,
  append: (batch: SessionEvent[]) => Promise<void>,
): Promise<string[]> {
  const sourceHashes: string[] = [];
  let pending: SessionEvent[] = [];
  for await (const event of from.read(id)) {
    const hash = eventHash(event);
    const seq = sourceHashes.length;
    sourceHashes.push(hash);
    if (targetHashes !== undefined && seq < targetHashes.length) {
      if (targetHashes[seq] !== hash) throw diverged(id, seq);
      continue;
    }
    pending.push(event);
    if (pending.length >= chunk) {
      await append(pending);
      pending = [];
    }
  }
  if (pending.length > 0) await append(pending);
  return sourceHashes;
}

/** Reads the copy back and compares it with the source; returns the log hash. CORRUPT on a mismatch. */
async function verifyCopy(to: SessionStore, id: string, sourceHashes: string[]): Promise<string> {
  const copied = (await readAll(to, id)).map(eventHash);
  const hash = logHash(sourceHashes);
  if (copied.length !== sourceHashes.length || logHash(copied) !== hash) {
    const at = planCopy(sourceHashes, copied);
    throw new TidemarkError(
      'CORRUPT',
      `session ${id}: verification after copy failed (${copied.length} of ${sourceHashes.length} events match)`,
      { sessionId: id, location: { seq: at.kind === 'diverged' ? at.atSeq : copied.length } },
    );
  }
  return hash;
}
