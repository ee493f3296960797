// The pool of open writers and their locks. A writer holds its session's lock and an open log
// descriptor; at most `maxOpenWriters` stay open, the least recently used idle one is retired
// beyond that, and another holder of a lock may ask this instance to retire its writer.
import { dirname } from 'node:path';
import { errors, type FileHandlePort, isTidemarkError } from '@tidemark/core';
import { assertRealBucket, locate } from './catalog.js';
import { syncNewLock } from './catalog-record.js';
import type { StoreContext, Writer } from './context.js';
import { ioOrAbsent, quietly } from './errors.js';
import { ensureDir } from './files.js';
import type { SessionPaths } from './layout.js';
import { acquireLock, type HeldLock, type LockHolder } from './lock.js';
import { recoverOpenedLog } from './recovery.js';
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
  return existing;
}

/** The writer of a session: this instance's, or a new one (lock, scan, torn-tail repair). Undefined when the session has no log. */
export async function ensureWriter(ctx: StoreContext, id: string): Promise<Writer | undefined> {
  const existing = ctx.writers.get(id);
  if (existing !== undefined) {
    ctx.writers.delete(id);
    ctx.writers.set(id, existing); // most recently used last
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
    const writer: Writer = { id, paths, handle, lock, unsynced: false, ...recovered };
    ctx.buckets.set(id, paths.bucket);
    await register(ctx, writer);
    return writer;
  } catch (error) {
    await quietly(() => handle.close());
    await release();
    throw error;
  }
}

/** Adds a writer to the pool, retiring least recently used idle ones beyond `maxOpenWriters`. */
export async function register(ctx: StoreContext, writer: Writer): Promise<void> {
  ctx.writers.set(writer.id, writer);
  if (ctx.writers.size <= ctx.maxOpenWriters) return;
  for (const [id] of ctx.writers) {
    if (ctx.writers.size <= ctx.maxOpenWriters) break;
    if (id !== writer.id && !ctx.queue.busy(id)) await quietly(() => retireWriter(ctx, id, true));
  }
}

/** Takes the writer of `id` out of the pool and closes it (see closeWriter); waits for one being retired. */
export async function retireWriter(ctx: StoreContext, id: string, refresh: boolean): Promise<void> {
  const writer = ctx.writers.get(id);
  if (writer === undefined) {
    // An eviction may still be releasing this session's lock: let it finish first.
    await ctx.retiring.get(id)?.catch(() => undefined);
    return;
  }
  ctx.writers.delete(id);
  const retired = closeWriter(ctx, writer, refresh);
  ctx.retiring.set(id, retired);
  try {
    await retired;
  } finally {
    if (ctx.retiring.get(id) === retired) ctx.retiring.delete(id);
  }
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
    release: () => ctx.queue.run(id, () => retireWriter(ctx, id, true)),
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
