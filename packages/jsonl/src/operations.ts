// The storage side of load, update and delete of a materialized session (each run in the
// session's queue). Reservations of sessions not yet written are the base class's (core).
import {
  applyPatch,
  commitStateOf,
  deleteConflict,
  errors,
  type LoadedSession,
  loadedSession,
  nextUpdatedAt,
  type RecoveryReport,
  type SessionSummary,
  type SummaryPatch,
  summaryAfterCut,
} from '@tidemark/core';
import { assertRealBucket, locate } from './catalog.js';
import { recordBeforeUnlock } from './catalog-record.js';
import type { StoreContext, Writer } from './context.js';
import { foreignLog, io, ioOrAbsent, problemError, quietly } from './errors.js';
import type { SessionPaths } from './layout.js';
import { flatten, readWhole, type WholeLog } from './reader.js';
import { cutTail } from './repair.js';
import { currentSummary, readSidecar, replaceSidecarDurably } from './summary.js';
import { syncUnsynced } from './writer.js';
import { ensureWriter, lockSession, retireWriter, writerForRepair } from './writers.js';

/**
 * Loads a session, repairing on the way what load may: a torn tail (unless another live writer
 * owns the session: then its torn bytes are a write in flight), and with `tail: 'cut'` the
 * interrupted tail.
 */
export async function loadSession(
  ctx: StoreContext,
  id: string,
  tail: 'keep' | 'cut',
): Promise<LoadedSession> {
  const paths = await locate(ctx, id);
  if (paths === undefined) throw errors.notFound(id);
  let log = await readWhole(ctx, paths, id);
  let recovered: RecoveryReport | undefined;
  if (log.end.problem === undefined) {
    const repaired = await repairForLoad(ctx, id, log, tail);
    if (repaired !== undefined) ({ log, recovered } = repaired);
  }
  if (log.end.problem !== undefined) throw problemError(log.end.problem, paths.log, id);
  const header = log.header!;
  if (header.meta.id !== id) throw foreignLog(paths.log, id, header.meta.id);
  const events = flatten(log.batches);
  const state = commitStateOf(events, ctx.isBoundary);
  const summary = summaryAfterCut(log.summary!, { ...state, eventCount: events.length });
  return loadedSession(header.meta, summary, events, state, recovered);
}

/** load's repair of a log read without a problem; undefined when nothing was (or could be) repaired. */
async function repairForLoad(
  ctx: StoreContext,
  id: string,
  log: WholeLog,
  tail: 'keep' | 'cut',
): Promise<{ log: WholeLog; recovered: RecoveryReport | undefined } | undefined> {
  const wantsCut = tail === 'cut' && commitStateOf(flatten(log.batches), ctx.isBoundary).interrupted;
  if (log.end.torn === undefined && !wantsCut) return undefined;
  const writer = await writerForRepair(ctx, id, log.end.torn !== undefined, wantsCut);
  if (writer === undefined) return undefined;
  const torn = writer.repaired;
  writer.repaired = undefined;
  let recovered: RecoveryReport | undefined =
    torn === undefined ? undefined : { tornBytes: torn.tornBytes, quarantinedAt: torn.quarantinedAt };
  if (wantsCut) {
    const cut = await cutTail(ctx, writer);
    if (cut !== undefined)
      recovered = { ...recovered, cutEvents: cut.cutEvents, quarantinedAt: cut.quarantinedAt };
  }
  return { log: await readWhole(ctx, writer.paths, id), recovered };
}

/**
 * Applies a validated patch to a materialized session's sidecar, durably; undefined when the
 * session has no log (the caller then patches its reservation).
 */
export async function updateStored(
  ctx: StoreContext,
  id: string,
  patch: SummaryPatch,
): Promise<SessionSummary | undefined> {
  const writer = await ensureWriter(ctx, id);
  if (writer === undefined) return undefined;
  // A sidecar only ever counts durable bytes, so relaxed appends not yet synced are synced first.
  try {
    await syncUnsynced(writer);
  } catch (error) {
    await quietly(() => retireWriter(ctx, id, false));
    throw error;
  }
  const previous = await readSidecar(ctx, writer.paths, id);
  const current = await currentSummary(ctx, writer.paths, id, writer.size);
  const next = applyPatch(current, patch, nextUpdatedAt(current.updatedAt));
  await replaceSidecarDurably(ctx.fs, writer.paths, id, { logSize: writer.size, summary: next }, previous);
  noteUpdate(writer, next);
  return structuredClone(next);
}

function noteUpdate(writer: Writer, next: SessionSummary): void {
  writer.sidecarSize = writer.size;
  writer.lastAtMs = Math.max(writer.lastAtMs, Date.parse(next.updatedAt));
}

/**
 * Removes a session's log and sidecar under its lock; `absent` when it has no log (or it vanished
 * meanwhile). With `ifUpdatedAt`, CONFLICT unless the session's updatedAt is that. The base class
 * ends this instance's reservation of the id when this resolves; a refused delete (CONFLICT, IO,
 * including a failed directory sync after the unlink) keeps it.
 */
export async function deleteStored(
  ctx: StoreContext,
  id: string,
  ifUpdatedAt: string | undefined,
): Promise<'deleted' | 'absent'> {
  const paths = await locate(ctx, id);
  if (paths === undefined) return 'absent';
  await quietly(() => retireWriter(ctx, id, false));
  await assertRealBucket(ctx, paths, id);
  const lock = await lockSession(ctx, paths, id);
  try {
    if (ifUpdatedAt !== undefined) {
      // Under the session lock: no writer in any process can append or update until we are done.
      const current = await currentSummary(ctx, paths, id);
      if (current.updatedAt !== ifUpdatedAt) throw deleteConflict(id, ifUpdatedAt, current.updatedAt);
    }
    return await removeLogThenSidecar(ctx, paths, id);
  } finally {
    ctx.buckets.delete(id);
    if (lock !== undefined) {
      await recordBeforeUnlock(ctx, paths, id);
      await quietly(() => lock.release());
    }
  }
}

/**
 * The log goes first: from then on the session is absent; a sidecar without a log is ignored. Its
 * removal is made durable before the sidecar's: a power cut may otherwise keep the second unlink
 * and drop the first, and the session would come back without its summary (title, tags and attrs
 * live only there), i.e. half-deleted.
 */
async function removeLogThenSidecar(
  ctx: StoreContext,
  paths: SessionPaths,
  id: string,
): Promise<'deleted' | 'absent'> {
  const removed = await ioOrAbsent(`removing ${paths.log}`, id, () =>
    ctx.fs.unlink(paths.log).then(() => true),
  );
  if (removed === undefined) return 'absent';
  await io(`syncing ${paths.dir}`, id, () => ctx.fs.syncDir(paths.dir));
  await ioOrAbsent(`removing ${paths.summary}`, id, () => ctx.fs.unlink(paths.summary));
  await io(`syncing ${paths.dir}`, id, () => ctx.fs.syncDir(paths.dir));
  return 'deleted';
}
