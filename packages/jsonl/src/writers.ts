// The pool of open writers and their locks. A writer holds its session's lock and an open log
// descriptor; at most `maxOpenWriters` stay open, the least recently used idle one is retired
// beyond that, another holder of a lock may ask this instance to retire its writer, and a writer
// idle for `lockIdleMs` retires itself, so that other processes can write its session. A writer
// retired so is parked (parked.ts): taking the lock again checks the log's end, not the whole log.
import { dirname } from 'node:path';
import { errors, type FileHandlePort, isTidemarkError } from '@tidemark/core';
import { assertRealBucket, locate } from './catalog.js';
import { syncNewLock } from './catalog-record.js';
import type { ParkedWriter, StoreContext, Writer } from './context.js';
import { ioOrAbsent, quietly } from './errors.js';
import { ensureDir } from './files.js';
import type { SessionPaths } from './layout.js';
import { acquireLock, type HeldLock, type LockHolder } from './lock.js';
import { isAsParked, rememberParked } from './parked.js';
import { recoverOpenedLog } from './recovery.js';
import { readSidecar } from './summary.js';
import { closeWriter, reopenHandle } from './writer.js';

/**
 * This instance's writer of `id` when it is open and its descriptor too (the common case of an
 * append), marked most recently used; undefined otherwise (then see {@link ensureWriter}). Synchronous,
 * so that the append path awaits nothing before its write.
 */
export function openWriterOf(ctx: StoreContext, id: string): Writer | undefined {
  const existing = ctx.writers.get(id);
  if (existing === undefined || existing.handle === undefined) return undefined;
  ctx.writers.delete(id);
  ctx.writers.set(id, existing); // most recently used last
  existing.usedAt = performance.now();
  return existing;
}

/** The writer of a session: this instance's, or a new one (lock, scan, torn-tail repair). Undefined when the session has no log. */
export async function ensureWriter(ctx: StoreContext, id: string): Promise<Writer | undefined> {
  const existing = ctx.writers.get(id);
  if (existing !== undefined) {
    ctx.writers.delete(id);
    ctx.writers.set(id, existing); // most recently used last
    existing.usedAt = performance.now();
    if (existing.handle === undefined) {
      try {
        await reopenHandle(ctx, existing);
      } catch (error) {
        await quietly(() => retireWriter(ctx, id, false));
        throw error;
      }
    }
    return existing;
  }
  await ctx.retiring.get(id)?.catch(() => undefined);
  const parked = ctx.parked.get(id);
  if (parked !== undefined) {
    ctx.parked.delete(id); // used once: whatever happens below, the next writer is found afresh
    const resumed = await resumeParked(ctx, id, parked);
    if (resumed !== undefined) return resumed;
  }
  const paths = await locate(ctx, id);
  if (paths === undefined) return undefined;
  await assertRealBucket(ctx, paths, id);
  const lock = await lockSession(ctx, paths, id);
  return openWriter(ctx, id, paths, lock);
}

/** Opens the log of a session whose lock is held, scans it, repairs a torn tail, registers the writer. */
export async function openWriter(
  ctx: StoreContext,
  id: string,
  paths: SessionPaths,
  lock: HeldLock | undefined,
): Promise<Writer | undefined> {
  const release = async () => {
    if (lock !== undefined) await quietly(() => lock.release());
  };
  let handle: FileHandlePort;
  try {
    const opened = await ioOrAbsent(`opening ${paths.log}`, id, () => ctx.fs.open(paths.log, ctx.logFlags));
    if (opened === undefined) {
      ctx.buckets.delete(id);
      await release();
      return undefined;
    }
    handle = opened;
  } catch (error) {
    await release();
    throw error;
  }
  try {
    const recovered = await recoverOpenedLog(ctx, handle, paths, id);
    const writer: Writer = {
      id,
      paths,
      handle,
      lock,
      unsynced: false,
      ...recovered,
      usedAt: performance.now(),
      idleTimer: undefined,
    };
    ctx.buckets.set(id, paths.bucket);
    await register(ctx, writer);
    return writer;
  } catch (error) {
    await quietly(() => handle.close());
    await release();
    throw error;
  }
}

/**
 * Adds a writer to the pool and starts its idle timer, retiring least recently used idle ones
 * beyond `maxOpenWriters`.
 */
export async function register(ctx: StoreContext, writer: Writer): Promise<void> {
  ctx.parked.delete(writer.id);
  ctx.writers.set(writer.id, writer);
  writer.usedAt = performance.now();
  armIdleTimer(ctx, writer, ctx.lockIdleMs);
  if (ctx.writers.size <= ctx.maxOpenWriters) return;
  for (const [id] of ctx.writers) {
    if (ctx.writers.size <= ctx.maxOpenWriters) break;
    if (id !== writer.id && !ctx.queue.busy(id)) await quietly(() => retireWriter(ctx, id, true, true));
  }
}

/**
 * Takes the writer of `id` out of the pool and closes it (see closeWriter); waits for one being
 * retired. With `park` it is remembered as parked (when it closed cleanly); without, any parked
 * writer of `id` is forgotten too, so that the next writer scans the log.
 */
export async function retireWriter(
  ctx: StoreContext,
  id: string,
  refresh: boolean,
  park = false,
): Promise<void> {
  const writer = ctx.writers.get(id);
  // An eviction or idle release may still be releasing this session's lock: let it finish first.
  if (writer === undefined) await ctx.retiring.get(id)?.catch(() => undefined);
  else await startRetiring(ctx, writer, refresh, park);
  if (!park) ctx.parked.delete(id);
}

/** Takes `writer` out of the pool and closes it; a new writer of its session waits for that (ctx.retiring). */
function startRetiring(ctx: StoreContext, writer: Writer, refresh: boolean, park: boolean): Promise<void> {
  const id = writer.id;
  ctx.writers.delete(id);
  const retired = closeWriter(ctx, writer, refresh, park).then((parked) => {
    if (parked !== undefined) rememberParked(ctx, id, parked);
  });
  ctx.retiring.set(id, retired);
  const forget = () => {
    if (ctx.retiring.get(id) === retired) ctx.retiring.delete(id);
  };
  retired.then(forget, forget);
  return retired;
}

/** How often an idle writer whose session has an operation in flight looks again. */
const BUSY_RECHECK_MS = 25;

/** Starts the timer that releases `writer` once it has been idle for `lockIdleMs` (none when Infinity). */
function armIdleTimer(ctx: StoreContext, writer: Writer, delay: number): void {
  if (ctx.lockIdleMs === Number.POSITIVE_INFINITY || writer.lock === undefined) return;
  // unref: an idle writer's lock never keeps the process alive (an exit without close() leaves
  // the lock to be taken over, as it always did).
  writer.idleTimer = setTimeout(() => onIdleTimer(ctx, writer), delay);
  writer.idleTimer.unref();
}

/**
 * The idle timer fired: wait the rest of the grace if the writer was used meanwhile, and a little
 * more while an operation on the session is in flight or queued; else release the writer, parked.
 * As an LRU eviction, outside the session's queue: an operation arriving meanwhile waits for the
 * release (ensureWriter), and another instance of this process asking for the lock finds this one
 * not busy and is handed the lock once it is released. A fault nobody waits for (a failed relaxed
 * fdatasync: the lock is released all the same, as by close()) is kept for close() to report.
 */
function onIdleTimer(ctx: StoreContext, writer: Writer): void {
  writer.idleTimer = undefined;
  if (ctx.writers.get(writer.id) !== writer) return;
  const idle = performance.now() - writer.usedAt;
  if (idle < ctx.lockIdleMs) armIdleTimer(ctx, writer, ctx.lockIdleMs - idle);
  else if (ctx.queue.busy(writer.id)) armIdleTimer(ctx, writer, Math.min(ctx.lockIdleMs, BUSY_RECHECK_MS));
  else
    startRetiring(ctx, writer, true, true).catch((error: unknown) => {
      ctx.backgroundFailure ??= error;
    });
}

/**
 * Takes the lock of a parked writer's session again and reopens its log. When the log still ends
 * exactly as the writer left it and the sidecar is this session's and counts no more than that,
 * nobody wrote the log meanwhile: the writer resumes from what it knew (the sidecar is read again,
 * for an update made meanwhile). Otherwise the log is scanned as for any new writer. Undefined
 * when the log is no longer where it was (the caller looks it up).
 */
async function resumeParked(
  ctx: StoreContext,
  id: string,
  parked: ParkedWriter,
): Promise<Writer | undefined> {
  const { paths } = parked;
  await assertRealBucket(ctx, paths, id);
  let lock: HeldLock | undefined;
  try {
    lock = await lockSession(ctx, paths, id);
  } catch (error) {
    // Held by another writer: what this one knew stays a hint for its next attempt.
    if (isTidemarkError(error, 'CONFLICT')) rememberParked(ctx, id, parked);
    throw error;
  }
  let handle: FileHandlePort | undefined;
  try {
    handle = await ioOrAbsent(`opening ${paths.log}`, id, () => ctx.fs.open(paths.log, ctx.logFlags));
    const sidecar =
      handle !== undefined && (await isAsParked(handle, parked, id))
        ? await readSidecar(ctx, paths, id)
        : undefined;
    if (handle !== undefined && sidecar?.summary.id === id && sidecar.logSize <= parked.size) {
      const writer: Writer = {
        id,
        paths,
        handle,
        lock,
        size: parked.size,
        nextSeq: parked.nextSeq,
        // The lock was taken again, and the log was checked by its last bytes only: its last
        // event is read (one line) if an append with `after` asks for it.
        last: undefined,
        // An update by another writer meanwhile moved updatedAt: appends record a later time.
        lastAtMs: Math.max(parked.lastAtMs, Date.parse(sidecar.summary.updatedAt) || 0),
        sidecarSize: sidecar.logSize,
        unsynced: false,
        repaired: parked.repaired,
        usedAt: performance.now(),
        idleTimer: undefined,
      };
      ctx.buckets.set(id, paths.bucket);
      await register(ctx, writer);
      return writer;
    }
  } catch (error) {
    if (handle !== undefined) await quietly(() => handle!.close());
    if (lock !== undefined) await quietly(() => lock!.release());
    throw error;
  }
  if (handle !== undefined) await quietly(() => handle!.close());
  // Changed (or gone) meanwhile: scanned afresh. openWriter releases the lock when it fails or
  // finds no log.
  return openWriter(ctx, id, paths, lock);
}

/**
 * Takes the writer lock of `id` (nothing with `lock: 'none'`). Locks live under the root, one per
 * id, not in the session's bucket: writers that create one id under two cwds must exclude each
 * other too.
 */
export async function lockSession(
  ctx: StoreContext,
  paths: SessionPaths,
  id: string,
): Promise<HeldLock | undefined> {
  if (!ctx.locking) return undefined;
  // Checked every time, as buckets are: `.locks` may have been removed since, or replaced by a
  // link, which lock files must never be written through.
  await ensureDir(ctx.fs, dirname(paths.lock), ctx.root, id);
  const lock = await acquireLock(ctx.fs, paths.lock, id, holderFor(ctx, id));
  try {
    await syncNewLock(ctx, paths, id);
  } catch (error) {
    await quietly(() => lock.release());
    throw error;
  }
  return lock;
}

/** How a lock asks this instance whether it uses session `id`, and to let it go. */
function holderFor(ctx: StoreContext, id: string): LockHolder {
  return {
    busy: () => ctx.queue.busy(id),
    release: () => ctx.queue.run(id, () => retireWriter(ctx, id, true, true)),
  };
}

/** A writer for load's repair; undefined when another live writer owns the session (its torn bytes are a write in flight). */
export async function writerForRepair(
  ctx: StoreContext,
  id: string,
  torn: boolean,
  cut: boolean,
): Promise<Writer | undefined> {
  if (torn && ctx.writers.has(id)) await retireWriter(ctx, id, false);
  try {
    const writer = await ensureWriter(ctx, id);
    if (writer === undefined) throw errors.notFound(id);
    return writer;
  } catch (error) {
    if (!cut && isTidemarkError(error, 'CONFLICT')) return undefined;
    throw error;
  }
}
