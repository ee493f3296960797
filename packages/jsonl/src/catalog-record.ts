// What the write path owes the catalog, so that list may trust an entry whose session has no lock
// file (see catalog-list.ts):
// - a new lock file is made durable before the writer writes anything (a crash cannot then keep
//   a write and lose the lock file that says the catalog may be behind it);
// - a writer's last word on its session is durable in the catalog before its lock file goes.
// Appends in between need no record: while the lock file exists list looks at the files.
import { dirname } from 'node:path';
import { deletedRecord, entryRecord, readToken } from './catalog-file.js';
import type { StoreContext } from './context.js';
import { io, quietly } from './errors.js';
import type { SessionPaths } from './layout.js';
import { describe } from './list-scan.js';

/** Makes the lock file just created for `id` durable (its directory synced). */
export async function syncNewLock(ctx: StoreContext, paths: SessionPaths, id: string): Promise<void> {
  if (ctx.catalog === undefined) return;
  const dir = dirname(paths.lock);
  await io(`syncing ${dir}`, id, () => ctx.fs.syncDir(dir));
}

/**
 * Records durably what session `id` is now, before its lock is released. When that cannot be
 * done the catalog is removed instead (the next list rebuilds it): a catalog that may be behind
 * a session without a lock file must not stay.
 */
export async function recordBeforeUnlock(ctx: StoreContext, paths: SessionPaths, id: string): Promise<void> {
  const cat = ctx.catalog;
  if (cat === undefined) return;
  try {
    const found = await describe(ctx, paths.bucket, id);
    let record: string;
    if (found.kind === 'absent') {
      cat.index?.remove(id);
      record = deletedRecord(paths.bucket, id);
    } else {
      cat.index?.set(found.entry, true);
      record = entryRecord(found.entry);
    }
    await appendDurably(ctx, record);
  } catch {
    await quietly(() => ctx.fs.unlink(cat.path));
  }
}

/**
 * Appends `record` and syncs it; when the path no longer holds the file it went to (a compaction
 * or rebuild replaced it meanwhile), writes it again to the file there now.
 */
async function appendDurably(ctx: StoreContext, record: string): Promise<void> {
  const cat = ctx.catalog!;
  for (let attempt = 0; attempt < 4; attempt++) {
    const token = await cat.sink.append(record, true);
    if (token === undefined) return; // no catalog: the next list rebuilds it from the sidecars
    if ((await readToken(ctx.fs, cat.path)) === token) return;
    await cat.sink.reset();
  }
  throw new Error('the catalog kept being replaced');
}
