// One session's writer: the append-only log kept open, what it knows of the log's committed
// length, and the steps that keep that knowledge true. As in LevelDB's log writer, a record (here
// a batch of framed lines, see format.ts) goes out in one write at the log's end; unlike it, a
// failed write or sync is never retried on the same descriptor, and the log is cut back to its
// committed length before the next write, so that a later line never joins a broken one.
import { errors, type PreparedEvent, toIoError } from '@tidemark/core';
import { recordBeforeUnlock } from './catalog-record.js';
import type { ParkedWriter, StoreContext, Writer } from './context.js';
import { io, quietly } from './errors.js';
import { writeAll } from './files.js';
import { encodeBatchBytes } from './format.js';
import { parkedOf, readTail } from './parked.js';
import { currentSummary, writeSidecar } from './summary.js';

/** A batch framed for the log, and the time it records. */
export interface FramedBatch {
  bytes: Buffer;
  lastSeq: number;
  atMs: number;
}

/**
 * Frames `batch` as the writer's next record. Its time is as core's nextUpdatedAt, on numbers:
 * the clock, or 1 ms past the last change if it has not moved.
 */
export function frameBatch(writer: Writer, batch: readonly PreparedEvent[]): FramedBatch {
  const lastSeq = batch[batch.length - 1]!.event.seq;
  const nowMs = Date.now();
  const atMs = nowMs > writer.lastAtMs ? nowMs : writer.lastAtMs + 1;
  const at = isoOfMs(atMs);
  return { bytes: encodeBatchBytes(batch, lastSeq, at), lastSeq, atMs };
}

/**
 * `new Date(ms).toISOString()`, formatting the date and time only once per second: every append
 * records a distinct millisecond (see frameBatch), so caching whole strings would never hit.
 */
export function isoOfMs(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== lastSecond.second) {
    const iso = new Date(ms).toISOString();
    // Only the common 24-character shape (years 0000-9999) is cut; others are formatted whole.
    if (iso.length !== 24) return iso;
    lastSecond.second = second;
    lastSecond.prefix = iso.slice(0, 20);
    return iso;
  }
  const milli = ms - second * 1000;
  return `${lastSecond.prefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}

const lastSecond = { second: Number.NaN, prefix: '' };

/**
 * Writes a framed batch at the end of the log. Strict: on the O_DSYNC descriptor, so the write
 * returns once the batch is durable. Relaxed: plus one fdatasync when `sync` (a boundary batch).
 * The writer's descriptor must be open ({@link reopenHandle}). On a fault the caller must
 * {@link rollback} before anything else uses the writer.
 */
export async function writeFramed(
  ctx: StoreContext,
  writer: Writer,
  framed: FramedBatch,
  sync: boolean,
): Promise<void> {
  const handle = writer.handle!;
  const { bytes } = framed;
  // One write is the rule; writeAll's loop only for the rare short write (one promise less per append).
  const n = await handle.write(bytes, 0, bytes.length, writer.size);
  if (n < bytes.length) await writeAll(handle, bytes.subarray(n), writer.size + n);
  if (sync && ctx.logFlags !== 'r+dsync') await handle.datasync();
}

/** Takes a written batch into the writer's view of the log. */
export function advanceWriter(writer: Writer, framed: FramedBatch, synced: boolean): void {
  writer.size += framed.bytes.length;
  writer.nextSeq = framed.lastSeq + 1;
  writer.lastAtMs = framed.atMs;
  writer.unsynced = !synced;
}

/**
 * After a failed write or fsync (a failed write on the O_DSYNC descriptor is a failed fdatasync
 * too): never retry the sync on the same descriptor (the kernel may have dropped the dirty pages
 * and would report success). Close it, reopen, truncate back to the committed length, sync, and
 * check the length. Returns false when that fails too: the caller then drops the writer, so that
 * the next use rescans the log and repairs its tail.
 */
export async function rollback(ctx: StoreContext, writer: Writer): Promise<boolean> {
  const broken = writer.handle;
  writer.handle = undefined;
  if (broken !== undefined) await quietly(() => broken.close());
  try {
    await reopenHandle(ctx, writer);
    return true;
  } catch {
    return false;
  }
}

/** Opens the log again and cuts it back to the writer's committed length (durably) when longer. */
export async function reopenHandle(ctx: StoreContext, writer: Writer): Promise<void> {
  const { log } = writer.paths;
  const handle = await io(`opening ${log}`, writer.id, () => ctx.fs.open(log, ctx.logFlags));
  try {
    const size = await io(`inspecting ${log}`, writer.id, () => handle.size());
    if (size < writer.size) {
      throw errors.corrupt(`session ${writer.id}: ${log} is shorter than its committed length`, {
        file: log,
        offset: size,
      });
    }
    if (size > writer.size) {
      await io(`truncating ${log}`, writer.id, () => handle.truncate(writer.size));
      await io(`syncing ${log}`, writer.id, () => handle.datasync());
      const after = await io(`inspecting ${log}`, writer.id, () => handle.size());
      if (after !== writer.size)
        throw toIoError(new Error(`truncate left ${after} bytes`), `truncating ${log}`, writer.id);
    }
  } catch (error) {
    await quietly(() => handle.close());
    throw error;
  }
  writer.handle = handle;
}

/**
 * Makes relaxed appends durable before a sidecar counts them (a tear inside counted bytes is
 * damage, not an unfinished write: see settleTear). A failed sync is never retried on this
 * descriptor: the caller drops the writer, so the next use reopens and rescans the log.
 */
export async function syncUnsynced(writer: Writer): Promise<void> {
  if (!writer.unsynced || writer.handle === undefined) return;
  const handle = writer.handle;
  try {
    await handle.datasync();
  } catch (error) {
    writer.unsynced = false;
    throw toIoError(error, `syncing ${writer.paths.log}`, writer.id);
  }
  writer.unsynced = false;
}

/** Rewrites the sidecar to describe the writer's committed length (not durably: it is a cache). */
export async function refreshSidecar(ctx: StoreContext, writer: Writer): Promise<void> {
  const summary = await currentSummary(ctx, writer.paths, writer.id, writer.size);
  await writeSidecar(
    ctx.fs,
    writer.paths.dir,
    writer.paths.summary,
    { logSize: writer.size, summary },
    {
      syncDir: false,
      sessionId: writer.id,
    },
  );
  writer.sidecarSize = writer.size;
}

/**
 * Closes one writer: stops its idle timer, syncs what relaxed mode owes, refreshes the sidecar,
 * closes the descriptor, releases the lock. With `park`, also returns what the writer knew of its
 * log (see parked.ts), read while the lock is still held; undefined when anything failed.
 */
export async function closeWriter(
  ctx: StoreContext,
  writer: Writer,
  refresh: boolean,
  park = false,
): Promise<ParkedWriter | undefined> {
  const id = writer.id;
  if (writer.idleTimer !== undefined) clearTimeout(writer.idleTimer);
  writer.idleTimer = undefined;
  let failure: unknown;
  if (writer.handle !== undefined && writer.unsynced) {
    try {
      await writer.handle.datasync();
    } catch (error) {
      failure = toIoError(error, `syncing ${writer.paths.log}`, id);
    }
  }
  if (refresh && failure === undefined && writer.size !== writer.sidecarSize) {
    await quietly(() => refreshSidecar(ctx, writer));
  }
  const { handle, lock } = writer;
  let parked: ParkedWriter | undefined;
  if (park && failure === undefined && handle !== undefined) {
    await quietly(async () => {
      parked = parkedOf(writer, await readTail(handle, writer.size, `reading ${writer.paths.log}`, id));
    });
  }
  if (handle !== undefined) await quietly(() => handle.close());
  if (lock !== undefined) {
    await recordBeforeUnlock(ctx, writer.paths, id);
    await quietly(() => lock.release());
  }
  if (failure !== undefined) throw failure;
  return parked;
}
