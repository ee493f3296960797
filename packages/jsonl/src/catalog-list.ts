// list through the catalog: a page costs the page, not the store.
//
// The catalog (catalog-file.ts) is a cache, so list trusts it only where nothing can have moved
// without it knowing:
// - a session being written holds a lock file under `.locks/` from before its first write until
//   after its writer's last record is durable in the catalog (see catalog-record.ts), so every
//   session with a lock file (live, or left by a crash) is looked at again on every list;
// - a log or sidecar created, renamed or removed by anyone changes its bucket's mtime: a bucket
//   whose mtime is not the one the catalog last saw it complete with is read again (readdir);
// - every entry a page shows is checked against its log's length and sidecar version first;
// - a session that cannot be described stays an entry and is tried again on every list.
// A catalog that is missing or not a catalog is rebuilt from the sidecars; one that cannot be
// read makes list look at every session, as a store without a catalog does.
import {
  isValidId,
  type ListProblem,
  pageOf,
  type SessionPage,
  type SessionSummary,
  type TidemarkError,
  type ValidListQuery,
} from '@tidemark/core';
import { locate } from './catalog.js';
import { applyRecords, readCatalog, stampRecord } from './catalog-file.js';
import { CatalogIndex, type CatalogState } from './catalog-index.js';
import { compactIfDue, RACY_MS, rebuildCatalog, takeIn } from './catalog-rebuild.js';
import type { StoreContext } from './context.js';
import { ioOrAbsent } from './errors.js';
import { bucketOf, isBucketName, LOCK_DIR } from './layout.js';
import { describe, forEachLimited, isCurrent, LIST_PARALLELISM, listByScan, logIdsIn } from './list-scan.js';

/** A page re-checked this many times without settling is returned as it stands. */
const MAX_PAGE_ROUNDS = 8;

/** One page of sessions, through the catalog when the store has one. */
export async function listSessions(ctx: StoreContext, q: ValidListQuery): Promise<SessionPage> {
  const cat = ctx.catalog;
  if (cat === undefined) return listByScan(ctx, q);
  const rootNames = await ioOrAbsent(`reading ${ctx.root}`, undefined, () => ctx.fs.readdir(ctx.root));
  if (rootNames === undefined) return pageOf([], q);
  const index = await followCatalog(ctx, cat, rootNames);
  if (index === undefined) return listByScan(ctx, q);
  const present = rootNames.filter(isBucketName);
  const buckets = q.cwd === undefined ? present : present.filter((b) => b === bucketOf(q.cwd));
  const problems = new Map<string, TidemarkError>();
  await restamp(ctx, index, buckets, problems);
  await lookAgain(ctx, index, rootNames.includes(LOCK_DIR), problems);
  const rows = await verifiedHead(ctx, index, buckets, q, problems);
  ctx.assertOpen();
  await compactIfDue(ctx, cat);
  const listed: ListProblem[] = [];
  for (const [id, error] of problems) {
    const entry = index.get(id);
    if (entry?.summary === undefined && entry !== undefined && buckets.includes(entry.bucket))
      listed.push({ id, error });
  }
  return pageOf(
    rows.map((s) => structuredClone(s)),
    q,
    listed,
  );
}

/**
 * The index, brought up to date with what other instances appended to the catalog since the last
 * read; rebuilt when the file is missing, not a catalog, or replaced. Undefined when the catalog
 * cannot be read (the caller then looks at every session).
 */
async function followCatalog(
  ctx: StoreContext,
  cat: CatalogState,
  rootNames: readonly string[],
): Promise<CatalogIndex | undefined> {
  let read: Awaited<ReturnType<typeof readCatalog>>;
  try {
    read = await readCatalog(ctx.fs, cat.path, { token: cat.token, offset: cat.offset });
  } catch {
    return undefined;
  }
  if (read.kind !== 'read') return rebuildCatalog(ctx, cat, rootNames.filter(isBucketName));
  if (read.token !== cat.token || cat.index === undefined) {
    cat.index = new CatalogIndex();
    cat.records = 0;
  }
  const applied = applyRecords(cat.index, read.bytes);
  cat.token = read.token;
  cat.offset = read.start + applied.consumed;
  cat.records += applied.records;
  return cat.index;
}

/** Reads again every bucket whose directory changed since the catalog last saw it complete. */
async function restamp(
  ctx: StoreContext,
  index: CatalogIndex,
  buckets: readonly string[],
  problems: Map<string, TidemarkError>,
): Promise<void> {
  await forEachLimited(buckets, LIST_PARALLELISM, async (bucket) => {
    const dir = `${ctx.root}/${bucket}`;
    const stat = await ioOrAbsent(`inspecting ${dir}`, undefined, () => ctx.fs.lstat(dir));
    if (stat === undefined || index.stamps.get(bucket) === stat.mtimeMs) return;
    // The mtime is taken before the readdir: a change after it shows as a new mtime next time.
    const ids = new Set(await logIdsIn(ctx, bucket));
    const known = index.idsIn(bucket);
    const fresh = [...ids].filter((id) => !known.has(id));
    const gone = [...known].filter((id) => !ids.has(id));
    for (const id of gone) takeIn(ctx, index, id, { kind: 'absent' });
    await forEachLimited(fresh, LIST_PARALLELISM, async (id) => {
      const found = await describe(ctx, bucket, id);
      if (found.kind === 'problem') problems.set(id, found.error);
      takeIn(ctx, index, id, found);
    });
    if (stat.mtimeMs < Date.now() - RACY_MS) {
      index.stamps.set(bucket, stat.mtimeMs);
      // Durable, and after the entries it vouches for: a stamp without them would hide sessions.
      await ctx.catalog!.sink.append(stampRecord(bucket, stat.mtimeMs), true).catch(() => undefined);
    }
  });
}

/** Looks again at every session with a lock file and every one that could not be described. */
async function lookAgain(
  ctx: StoreContext,
  index: CatalogIndex,
  hasLocks: boolean,
  problems: Map<string, TidemarkError>,
): Promise<void> {
  const lockDir = `${ctx.root}/${LOCK_DIR}`;
  const names = hasLocks
    ? ((await ioOrAbsent(`reading ${lockDir}`, undefined, () => ctx.fs.readdir(lockDir))) ?? [])
    : [];
  const ids = new Set<string>();
  for (const name of names) {
    const id = name.endsWith('.lock') ? name.slice(0, -'.lock'.length) : undefined;
    if (id !== undefined && isValidId(id)) ids.add(id);
  }
  for (const id of index.problemIds()) ids.add(id);
  await forEachLimited([...ids], LIST_PARALLELISM, async (id) => {
    const held = index.get(id);
    if (held?.summary !== undefined && (await isCurrent(ctx, held))) return;
    const bucket = held?.bucket ?? (await locate(ctx, id))?.bucket;
    if (bucket === undefined) return;
    const found = await describe(ctx, bucket, id);
    if (found.kind === 'problem') problems.set(id, found.error);
    takeIn(ctx, index, id, found);
  });
}

/**
 * The rows of the page (up to limit + 1, so that pageOf knows whether more follow), each checked
 * against its log and sidecar; a stale one is described again and the page taken again.
 */
async function verifiedHead(
  ctx: StoreContext,
  index: CatalogIndex,
  buckets: readonly string[],
  q: ValidListQuery,
  problems: Map<string, TidemarkError>,
): Promise<SessionSummary[]> {
  const cwdFiltered = (rows: ReturnType<CatalogIndex['head']>) =>
    rows.filter((e) => q.cwd === undefined || e.summary!.cwd === q.cwd).map((e) => e.summary!);
  for (let round = 0; ; round++) {
    const head = index.head(buckets, q.cursor, q.limit + 1);
    if (round === MAX_PAGE_ROUNDS) return cwdFiltered(head);
    let settled = true;
    await forEachLimited(head, LIST_PARALLELISM, async (entry) => {
      if (await isCurrent(ctx, entry)) return;
      settled = false;
      const found = await describe(ctx, entry.bucket, entry.id);
      if (found.kind === 'problem') problems.set(entry.id, found.error);
      takeIn(ctx, index, entry.id, found);
    });
    if (settled) return cwdFiltered(head);
  }
}
