// Recovery decisions: what a scan of a log means and what may be set aside. A torn tail found when
// a writer opens a log, an interrupted tail cut on request, a corrupt end dropped on request: in
// every case the bytes removed go to quarantine first (files.ts), then the log is shortened, so a
// repair destroys nothing. Acquiring the writer and its lock is the caller's (writers.ts).
import { commitStateOf, type FileHandlePort, summaryAfterCut } from '@tidemark/core';
import { type LastEvent, lastDecoded } from './after.js';
import type { StoreContext, TornRepair, Writer } from './context.js';
import { foreignLog, io, problemError, quietly } from './errors.js';
import { publishFile, quarantineRange, scanHandle, writeAll } from './files.js';
import { encodeBatch } from './format.js';
import type { SessionPaths } from './layout.js';
import { flatten, readWhole } from './reader.js';
import type { ScanBatch } from './scan.js';
import { committedSizeOf, readSidecar, scanFolding, settledAgainstSidecar, writeSidecar } from './summary.js';
import { reopenHandle } from './writer.js';

/** What a writer knows of a log it opened and recovered. */
export type RecoveredLog = Pick<
  Writer,
  'size' | 'nextSeq' | 'last' | 'lastAtMs' | 'sidecarSize' | 'repaired'
>;

/**
 * Scans the log open on `handle` (its lock held) and makes it fit for appending: CORRUPT or a
 * foreign header refuses it; a torn tail is quarantined and cut off; bytes no sidecar counted yet
 * are synced; a sidecar that does not describe this log is rewritten.
 */
export async function recoverOpenedLog(
  ctx: StoreContext,
  handle: FileHandlePort,
  paths: SessionPaths,
  id: string,
): Promise<RecoveredLog> {
  const sidecar = await readSidecar(ctx, paths, id);
  let lastAt: string | undefined;
  let lastBatch: ScanBatch | undefined;
  const { header, end, folder } = await scanFolding(ctx, handle, paths, id, sidecar, (batch) => {
    lastAt = batch.at;
    lastBatch = batch;
  });
  if (end.problem !== undefined) throw problemError(end.problem, paths.log, id);
  if (header !== undefined && header.meta.id !== id) throw foreignLog(paths.log, id, header.meta.id);
  let repaired: TornRepair | undefined;
  if (end.torn !== undefined) {
    // Set the torn bytes aside first, then cut them off: a new line never joins a torn one.
    const { offset, length, reason } = end.torn;
    const at = await quarantineRange(ctx.fs, ctx.root, id, 'torn', handle, offset, length);
    await io(`truncating ${paths.log}`, id, () => handle.truncate(end.committedBytes));
    await io(`syncing ${paths.log}`, id, () => handle.datasync());
    repaired = { tornBytes: length, quarantinedAt: at, offset, seq: end.nextSeq, reason };
  } else if ((committedSizeOf(sidecar, header) ?? -1) < end.committedBytes) {
    // Bytes no sidecar counted yet may be a relaxed writer's unsynced batches, left by a process
    // that died: make them durable before this writer's sidecar counts them (see settleTear).
    await io(`syncing ${paths.log}`, id, () => handle.datasync());
  }
  const summary = folder.result()!;
  const recovered: RecoveredLog = {
    size: end.committedBytes,
    nextSeq: end.nextSeq,
    last: lastOfScan(lastBatch, end.committedBytes),
    lastAtMs: Math.max(Date.parse(summary.updatedAt), Date.parse(lastAt ?? summary.updatedAt)),
    sidecarSize: sidecar?.logSize ?? -1,
    repaired,
  };
  if (!folder.isAnchored) {
    // Missing, foreign or describing a longer log (a repair shortened it): rewrite it before any
    // append can make a stale sidecar look current again.
    const rewritten = { logSize: recovered.size, summary };
    await writeSidecar(ctx.fs, paths.dir, paths.summary, rewritten, { syncDir: true, sessionId: id });
    recovered.sidecarSize = recovered.size;
  }
  return recovered;
}

/**
 * The scan's last committed batch holds the log's last event when it ends where the log now ends
 * (also when a torn tail after it was just cut off): kept, so that a first append with `after`
 * reads nothing more.
 */
function lastOfScan(batch: ScanBatch | undefined, committedBytes: number): LastEvent | undefined {
  if (batch === undefined || batch.endOffset !== committedBytes) return undefined;
  const event = batch.events[batch.events.length - 1]!;
  return lastDecoded(committedBytes, event, batch.endOffset - batch.offset);
}

/** An interrupted tail set aside, about to be cut off the log (see {@link prepareCut}). */
export interface CutPlan {
  /** Offset of the batch holding the first event cut. */
  offset: number;
  /** The kept events of that batch re-framed, when the boundary sits inside it. */
  reframed: Buffer | undefined;
  newSize: number;
  /** Bytes copied to quarantine: from `offset` to the end of the log. */
  quarantinedBytes: number;
  firstCut: number;
  cutEvents: number;
  quarantinedAt: string;
}

/**
 * `tail: 'cut'`, first half: finds the events after the last boundary, copies them to quarantine
 * and writes the sidecar of the shortened log (first: if a crash stops the cut half way it still
 * describes a prefix of the log). Undefined when the log is not interrupted.
 */
export async function prepareCut(ctx: StoreContext, writer: Writer): Promise<CutPlan | undefined> {
  const id = writer.id;
  const log = await readWhole(ctx, writer.paths, id);
  if (log.end.problem !== undefined) throw problemError(log.end.problem, writer.paths.log, id);
  const events = flatten(log.batches);
  const state = commitStateOf(events, ctx.isBoundary);
  if (!state.interrupted) return undefined;
  const firstCut = state.committedSeq + 1;
  const batch: ScanBatch = log.batches.find((b) => b.events[b.events.length - 1]!.seq >= firstCut)!;
  const quarantinedBytes = writer.size - batch.offset;
  const quarantinedAt = await quarantineRange(
    ctx.fs,
    ctx.root,
    id,
    'tail',
    writer.handle!,
    batch.offset,
    quarantinedBytes,
  );
  const inPlace = batch.events[0]!.seq === firstCut;
  const kept = batch.events.filter((e) => e.seq < firstCut).map((event) => ({ json: JSON.stringify(event) }));
  const reframed = inPlace ? undefined : Buffer.from(encodeBatch(kept, state.committedSeq, batch.at), 'utf8');
  const newSize = batch.offset + (reframed?.length ?? 0);
  // As in the reference model a cut changes the counts and the commit state only.
  const summary = summaryAfterCut(log.summary!, events.slice(0, firstCut), ctx.isBoundary);
  await writeSidecar(
    ctx.fs,
    writer.paths.dir,
    writer.paths.summary,
    { logSize: newSize, summary },
    { syncDir: true, sessionId: id },
  );
  const cutEvents = events.length - firstCut;
  return { offset: batch.offset, reframed, newSize, quarantinedBytes, firstCut, cutEvents, quarantinedAt };
}

/**
 * `tail: 'cut'`, second half: when the boundary ends a batch the log is truncated in place; when
 * it sits inside a batch, that batch must be re-framed, so the log is rewritten as a new file and
 * renamed over the old one (atomic), and the writer reopens it. On a fault the writer no longer
 * describes the log: the caller drops it.
 */
export async function applyCut(ctx: StoreContext, writer: Writer, plan: CutPlan): Promise<void> {
  const id = writer.id;
  const handle = writer.handle!;
  const { offset, reframed } = plan;
  if (reframed === undefined) {
    await io(`truncating ${writer.paths.log}`, id, () => handle.truncate(offset));
    await io(`syncing ${writer.paths.log}`, id, () => handle.datasync());
    return;
  }
  const rewrite = async (out: FileHandlePort) => {
    const chunk = new Uint8Array(1024 * 1024);
    for (let copied = 0; copied < offset; ) {
      const n = await handle.read(chunk, 0, Math.min(chunk.length, offset - copied), copied);
      if (n === 0) throw Object.assign(new Error('log shrank while being rewritten'), { code: 'EIO' });
      await writeAll(out, chunk.subarray(0, n), copied);
      copied += n;
    }
    await writeAll(out, reframed, offset);
  };
  await publishFile(ctx.fs, writer.paths.dir, writer.paths.log, rewrite, 'rename', id);
  await quietly(() => handle.close());
  writer.handle = undefined;
  writer.size = plan.newSize;
  await reopenHandle(ctx, writer);
}

/** The damaged end of a corrupt log, set aside by {@link dropCorruptEnd}. */
export interface DroppedEnd {
  /** Where the damage starts: the end of the last good batch, where the log was truncated. */
  offset: number;
  bytes: number;
  /** The seq the first damaged event would have had. */
  seq: number;
  /** What the scan found wrong there. */
  damage: string;
  path: string;
}

/**
 * `repair({ dropCorrupt })` on the log open on `handle` (its lock held): quarantines everything
 * from the end of the last good batch of a corrupt log and truncates it there. Undefined when the
 * log is not corrupt.
 */
export async function dropCorruptEnd(
  ctx: StoreContext,
  handle: FileHandlePort,
  paths: SessionPaths,
  id: string,
): Promise<DroppedEnd | undefined> {
  const scanned = await scanHandle(handle, `reading ${paths.log}`, id, {});
  // The same reading as load's: a tear inside what the sidecar counted is damage to drop.
  const end = await settledAgainstSidecar(ctx, scanned, paths, id);
  if (end.problem === undefined || end.problem.kind !== 'corrupt' || end.header === undefined)
    return undefined;
  const size = await io(`inspecting ${paths.log}`, id, () => handle.size());
  const path = await quarantineRange(
    ctx.fs,
    ctx.root,
    id,
    'torn',
    handle,
    end.committedBytes,
    size - end.committedBytes,
  );
  await io(`truncating ${paths.log}`, id, () => handle.truncate(end.committedBytes));
  await io(`syncing ${paths.log}`, id, () => handle.datasync());
  const offset = end.committedBytes;
  return { offset, bytes: size - offset, seq: end.nextSeq, damage: end.problem.message, path };
}
