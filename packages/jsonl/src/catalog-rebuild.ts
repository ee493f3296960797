// Writing the catalog file whole: a rebuild from the sidecars (the file is missing or not a
// catalog) and a compaction (its records piled up). Both hold `<root>/.catalog.lock` while they
// replace the file, and both close the race with writers that appended meanwhile:
// - a compaction copies the old file's records written after its snapshot into the new file
//   after the rename; a writer whose durable record went to the old file after that checks the
//   path's token and writes it again (catalog-record.ts);
// - a rebuild looks at every session again after the rename and records durably any that changed
//   since it was described.
import { join } from 'node:path';
import type { FileHandlePort } from '@tidemark/core';
import {
  appendAt,
  CATALOG_LOCK_NAME,
  deletedRecord,
  entryRecord,
  readRange,
  readToken,
  recordsOf,
  replaceCatalog,
} from './catalog-file.js';
import { CatalogIndex, type CatalogState } from './catalog-index.js';
import type { StoreContext } from './context.js';
import { ioOrAbsent, quietly } from './errors.js';
import { sessionPaths } from './layout.js';
import {
  type Described,
  describe,
  forEachLimited,
  isCurrent,
  LIST_PARALLELISM,
  logsInBuckets,
} from './list-scan.js';
import { acquireLock, type HeldLock } from './lock.js';

/** A bucket whose mtime is this recent may still change within the same tick: not trusted yet. */
export const RACY_MS = 2000;
/** Compaction is due once the file holds this many records more than twice the sessions. */
const COMPACT_SLACK = 10_000;

/**
 * Takes what a look at a session found into the index and returns its record (also passed on
 * to other instances as a hint, unless `send` is false).
 */
export function takeIn(
  ctx: StoreContext,
  index: CatalogIndex,
  id: string,
  found: Described,
  send = true,
): string {
  let record = '';
  if (found.kind === 'absent') {
    const held = index.get(id);
    if (held === undefined) return '';
    index.remove(id);
    record = deletedRecord(held.bucket, id);
  } else {
    index.set(found.entry, true);
    record = entryRecord(found.entry);
  }
  if (send) ctx.catalog!.sink.append(record, false).catch(() => undefined);
  return record;
}

/**
 * Rebuilds the index from every session's sidecar (brought forward over the log where stale) and
 * writes it as a new catalog file. The index serves this list even when the file cannot be written.
 */
export async function rebuildCatalog(
  ctx: StoreContext,
  cat: CatalogState,
  buckets: readonly string[],
): Promise<CatalogIndex> {
  const index = new CatalogIndex();
  const stamps = new Map<string, number>();
  await forEachLimited(buckets, LIST_PARALLELISM, async (bucket) => {
    const dir = sessionPaths(ctx.root, bucket, 'x').dir;
    const stat = await ioOrAbsent(`inspecting ${dir}`, undefined, () => ctx.fs.lstat(dir));
    if (stat !== undefined && stat.mtimeMs < Date.now() - RACY_MS) stamps.set(bucket, stat.mtimeMs);
  });
  // A bucket that cannot be read leaves the rebuild incomplete: it is kept in memory for this list
  // (whose own buckets are read again, and fail, by the caller) but never written as the catalog.
  let complete = true;
  const found: { id: string; bucket: string }[] = [];
  for (const bucket of buckets) {
    try {
      found.push(...(await logsInBuckets(ctx, [bucket])));
    } catch {
      complete = false;
      stamps.delete(bucket);
    }
  }
  await forEachLimited(found, LIST_PARALLELISM, async ({ id, bucket }) => {
    const described = await describe(ctx, bucket, id);
    if (described.kind !== 'absent') index.set(described.entry, true);
  });
  for (const [bucket, mtime] of stamps) index.stamps.set(bucket, mtime);
  cat.index = index;
  cat.token = undefined;
  cat.offset = 0;
  cat.records = 0;
  if (complete) await quietly(() => writeRebuilt(ctx, cat, index));
  return index;
}

async function writeRebuilt(ctx: StoreContext, cat: CatalogState, index: CatalogIndex): Promise<void> {
  const lock = await catalogLock(ctx);
  if (lock === undefined) return;
  try {
    const written = await replaceCatalog(ctx.fs, ctx.root, recordsOf(index));
    cat.token = written.token;
    cat.offset = written.size;
    await cat.sink.reset();
    const changed: string[] = [];
    await forEachLimited([...index.all()], LIST_PARALLELISM, async (entry) => {
      if (entry.summary !== undefined && (await isCurrent(ctx, entry))) return;
      const described = await describe(ctx, entry.bucket, entry.id);
      changed.push(takeIn(ctx, index, entry.id, described, false));
    });
    if (changed.length > 0) await cat.sink.append(changed.join(''), true);
  } finally {
    await quietly(() => lock.release());
  }
}

/** Rewrites the catalog from the index when its records have piled up; a failure leaves it as it was. */
export async function compactIfDue(ctx: StoreContext, cat: CatalogState): Promise<void> {
  const index = cat.index;
  if (index === undefined || cat.token === undefined) return;
  if (cat.records <= 2 * index.size + COMPACT_SLACK) return;
  const lock = await catalogLock(ctx);
  if (lock === undefined) return;
  let old: FileHandlePort | undefined;
  try {
    old = await ctx.fs.open(cat.path, 'r');
    // Under the lock nobody else replaces the file: the token read now is the file `old` holds.
    if ((await readToken(ctx.fs, cat.path)) !== cat.token) return;
    const from = cat.offset;
    const oldFile = old;
    let snapshotEnd = 0;
    const written = await replaceCatalog(ctx.fs, ctx.root, recordsOf(index), async (handle, size) => {
      snapshotEnd = size;
      return appendAt(handle, await readRange(oldFile, from), size);
    });
    cat.token = written.token;
    cat.offset = snapshotEnd;
    cat.records = 0;
    await cat.sink.reset();
  } catch {
    // A cache: compaction is tried again by a later list.
  } finally {
    const opened = old;
    if (opened !== undefined) await quietly(() => opened.close());
    await quietly(() => lock.release());
  }
}

/** The lock of a catalog rewrite; undefined when another holds it (or it cannot be taken). */
async function catalogLock(ctx: StoreContext): Promise<HeldLock | undefined> {
  try {
    return await acquireLock(ctx.fs, join(ctx.root, CATALOG_LOCK_NAME), 'catalog', {
      busy: () => true,
      release: async () => undefined,
    });
  } catch {
    return undefined;
  }
}
