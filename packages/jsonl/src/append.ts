// Appending: the first batch of a session publishes its log (header and batch in one new file),
// every later batch goes through the session's writer. The reservation of a first batch is the
// store's (core's `Reservations`); the base class ends it once an append lands. `after` (append's
// option) is checked here, by the writer under its lock, right before its write (see after.ts).
import {
  assertSameEvents,
  assertStoredAfter,
  errors,
  nowIso,
  type PreparedEvent,
  planAppend,
  type Reservation,
  type SessionEvent,
  toIoError,
} from '@tidemark/core';
import { assertAfterIsLast, knownLast, lastDecoded, lastWritten, placeOfAfter } from './after.js';
import { assertRealBucket, ensureRoot, logInBuckets } from './catalog.js';
import type { StoreContext, Writer } from './context.js';
import { io, ioOrAbsent, quietly } from './errors.js';
import { ensureDir, publishFile, writeAll } from './files.js';
import { encodeBatch, encodeHeader, FORMAT_VERSION } from './format.js';
import { bucketOf, type SessionPaths, sessionPaths } from './layout.js';
import type { HeldLock } from './lock.js';
import { readLastLineEvent } from './read-last.js';
import { readEvents } from './reader.js';
import { SIDECAR_REFRESH_BYTES, SummaryFolder, writeSidecar } from './summary.js';
import { advanceWriter, frameBatch, refreshSidecar, reopenHandle, rollback, writeFramed } from './writer.js';
import { ensureWriter, lockSession, openWriter, openWriterOf, register, retireWriter } from './writers.js';

/**
 * Appends a validated batch to session `id` (in its queue): through its writer when it has a log,
 * else as the first batch of `reservation`; NOT_FOUND without either. With `after` (validated by
 * the base class to end right before the batch), CONFLICT and nothing written unless the stored
 * event at `after.seq` is `after`.
 */
export async function appendToSession(
  ctx: StoreContext,
  id: string,
  batch: readonly PreparedEvent[],
  reservation: Reservation | undefined,
  after?: PreparedEvent,
): Promise<{ nextSeq: number }> {
  const writer = openWriterOf(ctx, id) ?? (await ensureWriter(ctx, id));
  if (writer !== undefined) return appendTo(ctx, writer, batch, after);
  if (reservation === undefined) throw errors.notFound(id);
  // A session not yet written holds no event to append after (and `after` never precedes seq 0).
  if (after !== undefined) assertStoredAfter(id, undefined, after);
  return publishFirst(ctx, id, reservation, batch);
}

/** First batch: header and events published together as a new file (temp, fsync, link, dir fsync). */
async function publishFirst(
  ctx: StoreContext,
  id: string,
  reservation: Reservation,
  batch: readonly PreparedEvent[],
): Promise<{ nextSeq: number }> {
  planAppend(id, 0, batch);
  const paths = sessionPaths(ctx.root, bucketOf(reservation.meta.cwd), id);
  await ensureRoot(ctx, id);
  await ensureDir(ctx.fs, paths.dir, ctx.root, id);
  await assertRealBucket(ctx, paths, id);
  const lock = await lockSession(ctx, paths, id);
  try {
    // Under the id's lock, which every writer of this id takes whatever its cwd: another writer
    // may have published the id in another bucket first. Then it is that session, as when the
    // link below finds our own bucket taken, and as the reference model has it: the batch goes
    // through its seq rules (CONFLICT, or an idempotent retry).
    const elsewhere = await logInBuckets(ctx, id, new Set([paths.bucket]));
    if (elsewhere !== undefined) return await appendToPublished(ctx, id, elsewhere, lock, batch);
    const last = batch[batch.length - 1]!.event.seq;
    // The time of this append, as the reference model has it: a given createdAt (an import keeps
    // the original's, which another machine's clock may have put in our future) is not a change.
    const at = nowIso();
    const headerText = encodeHeader(reservation.meta, reservation.patch);
    const bytes = Buffer.from(headerText + encodeBatch(batch, last, at), 'utf8');
    await removeStaleSidecar(ctx, paths, id);
    const published = await publishFile(
      ctx.fs,
      paths.dir,
      paths.log,
      (h) => writeAll(h, bytes, 0),
      'link',
      id,
    );
    // Another instance published this id first: append to its log like any other.
    if (!published) return await appendToPublished(ctx, id, paths, lock, batch);
    ctx.buckets.set(id, paths.bucket);
    const handle = await ioOrAbsent(`opening ${paths.log}`, id, () =>
      ctx.fs.open(paths.log, ctx.logFlags),
    ).catch(() => undefined);
    const writer: Writer = {
      id,
      paths,
      handle,
      lock,
      size: bytes.length,
      nextSeq: last + 1,
      last: lastWritten(bytes.length, batch),
      lastAtMs: Date.parse(at),
      sidecarSize: -1,
      unsynced: false,
      repaired: undefined,
      usedAt: performance.now(),
      idleTimer: undefined,
    };
    await register(ctx, writer);
    await writeFirstSidecar(ctx, writer, reservation, {
      batch,
      at,
      headerBytes: Buffer.byteLength(headerText),
    });
    return { nextSeq: writer.nextSeq };
  } catch (error) {
    if (lock !== undefined && !ctx.writers.has(id)) await quietly(() => lock.release());
    throw error;
  }
}

/**
 * No log here, and we hold the id's lock: a sidecar here is left from an earlier session of this
 * id (a delete whose unlink of it was lost in a crash), maybe with the same createdAt (a restore
 * or import keeps it). It must never describe the new log: remove it, durably, first.
 */
async function removeStaleSidecar(ctx: StoreContext, paths: SessionPaths, id: string): Promise<void> {
  if ((await ioOrAbsent(`inspecting ${paths.log}`, id, () => ctx.fs.lstat(paths.log))) !== undefined) return;
  const removed = await ioOrAbsent(`removing ${paths.summary}`, id, () =>
    ctx.fs.unlink(paths.summary).then(() => true),
  );
  // Synced on its own: a crash may otherwise keep the new log's link and lose this unlink.
  if (removed) await io(`syncing ${paths.dir}`, id, () => ctx.fs.syncDir(paths.dir));
}

/** The sidecar of a just published log. The header holds what it would add, so it need not be durable. */
async function writeFirstSidecar(
  ctx: StoreContext,
  writer: Writer,
  reservation: Reservation,
  first: { batch: readonly PreparedEvent[]; at: string; headerBytes: number },
): Promise<void> {
  const { paths, id } = writer;
  const folder = new SummaryFolder(undefined, ctx.isBoundary);
  folder.header(
    {
      version: FORMAT_VERSION,
      meta: { ...reservation.meta, formatVersion: FORMAT_VERSION },
      init: reservation.patch,
    },
    first.headerBytes,
  );
  folder.batch({
    events: first.batch.map((p) => p.event),
    at: first.at,
    offset: first.headerBytes,
    endOffset: writer.size,
  });
  await quietly(async () => {
    await writeSidecar(
      ctx.fs,
      paths.dir,
      paths.summary,
      { logSize: writer.size, summary: folder.result()! },
      { syncDir: false, sessionId: id },
    );
    writer.sidecarSize = writer.size;
  });
}

/**
 * A reserved id's first batch, on the log another instance published (its lock held): appended
 * like any other (the base class then ends the reservation; a refused one keeps it).
 */
async function appendToPublished(
  ctx: StoreContext,
  id: string,
  paths: SessionPaths,
  lock: HeldLock | undefined,
  batch: readonly PreparedEvent[],
): Promise<{ nextSeq: number }> {
  const writer = await openWriter(ctx, id, paths, lock);
  if (writer === undefined) throw errors.notFound(id);
  return appendTo(ctx, writer, batch);
}

/**
 * Later batches: the check of `after`, the idempotent retry check, then one write (see
 * writeFramed). A failed write is rolled back; when even that fails the writer is dropped, and the
 * next use rescans the log.
 */
async function appendTo(
  ctx: StoreContext,
  writer: Writer,
  batch: readonly PreparedEvent[],
  after?: PreparedEvent,
): Promise<{ nextSeq: number }> {
  const id = writer.id;
  // Before the seq rules, as the reference model checks it: a batch past the end is CONFLICT
  // either way, one planned on another log's end says so.
  const place = after === undefined ? undefined : placeOfAfter(after, writer.nextSeq);
  if (place === 'past-end') assertStoredAfter(id, undefined, after!);
  else if (place === 'last') await assertAfterIsLastOf(ctx, writer, after!);
  const plan = planAppend(id, writer.nextSeq, batch);
  if (plan.kind === 'compare') {
    // A retry of stored events; `after` is then an earlier stored event, read along with them.
    const from = place === 'inside' ? after!.event.seq : plan.fromSeq;
    const stored: SessionEvent[] = [];
    for await (const event of readEvents(ctx, id, from, plan.toSeq)) stored.push(event);
    if (place === 'inside') assertStoredAfter(id, stored.shift(), after!);
    assertSameEvents(id, stored, batch);
    return { nextSeq: writer.nextSeq };
  }
  if (writer.handle === undefined) await reopenHandle(ctx, writer);
  const framed = frameBatch(writer, batch);
  const sync = ctx.durability === 'strict' || batch.some((item) => ctx.isBoundary(item.event));
  try {
    await writeFramed(ctx, writer, framed, sync);
  } catch (error) {
    if (!(await rollback(ctx, writer))) await quietly(() => retireWriter(ctx, writer.id, false));
    throw toIoError(error, `appending to ${writer.paths.log}`, id);
  }
  advanceWriter(writer, framed, sync);
  writer.last = lastWritten(writer.size, batch);
  writer.usedAt = performance.now(); // idle from the end of an append, however long it took
  if (sync && writer.size - writer.sidecarSize > SIDECAR_REFRESH_BYTES) {
    await quietly(() => refreshSidecar(ctx, writer));
  }
  return { nextSeq: writer.nextSeq };
}

/**
 * `after` names the log's last event: checked against what the writer knows of it (nothing read:
 * see after.ts), else against its last line, read on the writer's descriptor (it took the lock
 * again after an idle release, a tail cut changed the log's end, or the event was too large to
 * keep), else against the whole-log reader's event at that seq (a last line the quick read cannot
 * vouch for, such as one over its bound). Under the lock all the same: no other writer can change
 * the log before this append's write. A line read is kept (when small), for the next check.
 */
async function assertAfterIsLastOf(ctx: StoreContext, writer: Writer, after: PreparedEvent): Promise<void> {
  const known = knownLast(writer.last, writer.size);
  if (known !== undefined) return assertAfterIsLast(writer.id, known, after);
  const { id, size } = writer;
  const seq = after.event.seq;
  if (writer.handle === undefined) await reopenHandle(ctx, writer);
  const line = await readLastLineEvent(writer.paths.log, id, writer.handle!, size, seq);
  let stored = line?.event;
  if (line !== undefined) writer.last = lastDecoded(size, line.event, line.lineBytes);
  else for await (const event of readEvents(ctx, id, seq, seq)) stored ??= event;
  assertStoredAfter(id, stored, after);
}
