// The catalog of a store root: which bucket holds a session's log, the list of all sessions
// (through their sidecars, so list reads no logs), and the durable creation of the root.
import { dirname } from 'node:path';
import {
  errnoOf,
  isTidemarkError,
  isValidId,
  type ListProblem,
  pageOf,
  type SessionPage,
  type SessionSummary,
  toIoError,
  type ValidListQuery,
} from '@tidemark/core';
import type { StoreContext } from './context.js';
import { foreignLog, io, ioOrAbsent } from './errors.js';
import { bucketOf, idOfLogName, isBucketName, type SessionPaths, sessionPaths } from './layout.js';
import { currentSummary } from './summary.js';

/** Summaries of one list are computed this many at a time. */
const LIST_PARALLELISM = 16;

/**
 * The paths of a materialized session, or undefined when it truly does not exist. Looks in the
 * remembered bucket first, then in every bucket: an id can be found without its cwd. Only ENOENT
 * counts as absence; a bucket that cannot be read fails the lookup with IO.
 */
export async function locate(ctx: StoreContext, id: string): Promise<SessionPaths | undefined> {
  const tried = new Set<string>();
  const reservation = ctx.reservations.get(id);
  const hints = [ctx.buckets.get(id), reservation !== undefined ? bucketOf(reservation.meta.cwd) : undefined];
  for (const bucket of hints) {
    if (bucket === undefined || tried.has(bucket)) continue;
    tried.add(bucket);
    const paths = await logIn(ctx, bucket, id);
    if (paths !== undefined) return paths;
  }
  const paths = await logInBuckets(ctx, id, tried);
  if (paths === undefined) ctx.buckets.delete(id);
  return paths;
}

async function logIn(ctx: StoreContext, bucket: string, id: string): Promise<SessionPaths | undefined> {
  const paths = sessionPaths(ctx.root, bucket, id);
  const stat = await ioOrAbsent(`inspecting ${paths.log}`, id, () => ctx.fs.lstat(paths.log));
  if (stat === undefined) return undefined;
  ctx.buckets.set(id, bucket);
  return paths;
}

/** The log of `id` in the first bucket (in name order) not in `skip` that holds one. */
export async function logInBuckets(
  ctx: StoreContext,
  id: string,
  skip: ReadonlySet<string>,
): Promise<SessionPaths | undefined> {
  const names = await ioOrAbsent(`reading ${ctx.root}`, id, () => ctx.fs.readdir(ctx.root));
  for (const bucket of (names ?? []).filter(isBucketName).sort()) {
    if (skip.has(bucket)) continue;
    const paths = await logIn(ctx, bucket, id);
    if (paths !== undefined) return paths;
  }
  return undefined;
}

/**
 * Refuses a bucket that is not a real directory before anything is written in it: O_NOFOLLOW
 * guards only the last path component, and a planted bucket symlink would redirect every write.
 */
export async function assertRealBucket(ctx: StoreContext, paths: SessionPaths, id: string): Promise<void> {
  const stat = await io(`inspecting ${paths.dir}`, id, () => ctx.fs.lstat(paths.dir));
  if (stat.isDirectory() && !stat.isSymbolicLink()) return;
  throw toIoError(
    Object.assign(new Error(`${paths.dir} is not a directory (a link?)`), { code: 'ELOOP' }),
    `opening ${paths.dir}`,
    id,
  );
}

/** Creates the root when missing (every new ancestor's entry made durable), or makes a found one's entry durable once. */
export async function ensureRoot(ctx: StoreContext, id: string): Promise<void> {
  const stat = await ioOrAbsent(`inspecting ${ctx.root}`, id, () => ctx.fs.lstat(ctx.root));
  if (stat !== undefined) {
    if (!stat.isDirectory()) {
      throw toIoError(
        Object.assign(new Error('not a directory'), { code: 'ENOTDIR' }),
        `opening ${ctx.root}`,
        id,
      );
    }
    if (!ctx.rootEntrySynced) {
      // Found, not made: its creator (`mkdir -p`) may have been killed before syncing the new
      // entries, and every log published under it would vanish with them at a power loss. So
      // each ancestor's entry is synced, once per store instance.
      for (let dir = ctx.root; dir !== dirname(dir); dir = dirname(dir)) await syncParentOf(ctx, dir, id);
      ctx.rootEntrySynced = true;
    }
    return;
  }
  // Every directory the recursive mkdir creates is a new entry in its parent: fsync each parent,
  // top down, or power loss may drop a new ancestor and with it the first acknowledged batch.
  const created = [ctx.root];
  for (let dir = dirname(ctx.root); dir !== dirname(dir); dir = dirname(dir)) {
    if ((await ioOrAbsent(`inspecting ${dir}`, id, () => ctx.fs.lstat(dir))) !== undefined) break;
    created.unshift(dir);
  }
  await io(`creating ${ctx.root}`, id, () => ctx.fs.mkdir(ctx.root, { recursive: true, mode: 0o700 }));
  for (const dir of created) await syncParentOf(ctx, dir, id);
  ctx.rootEntrySynced = true;
}

/**
 * Makes the entry of `dir` in its parent durable. A parent this user may not read (EACCES,
 * EPERM: writable and searchable but not readable) cannot be opened to sync; keeping it durable
 * is then its owner's affair, and refusing every append would help no one.
 */
async function syncParentOf(ctx: StoreContext, dir: string, id: string): Promise<void> {
  try {
    await ctx.fs.syncDir(dirname(dir));
  } catch (error) {
    const errno = errnoOf(error);
    if (errno !== 'EACCES' && errno !== 'EPERM') throw toIoError(error, `syncing ${dirname(dir)}`, id);
  }
}

/** One page of sessions: every log in the buckets the query names, summarized through its sidecar. */
export async function listSessions(ctx: StoreContext, q: ValidListQuery): Promise<SessionPage> {
  const found = await logsInBuckets(ctx, q.cwd);
  const summaries: SessionSummary[] = [];
  const problems: ListProblem[] = [];
  await forEachLimited(found, LIST_PARALLELISM, async ({ id, paths }) => {
    try {
      const summary = await listedSummary(ctx, paths, id);
      if (summary !== undefined) summaries.push(summary);
    } catch (error) {
      problems.push({ id, error: toIoError(error, `summarizing ${id}`, id) });
    }
  });
  // Gathering took a while: a store closed meanwhile answers CLOSED, not a page.
  ctx.assertOpen();
  return pageOf(summaries, q, problems);
}

/** Every log in the bucket of `cwd`, or in all buckets, in bucket name order. */
async function logsInBuckets(
  ctx: StoreContext,
  cwd: string | undefined,
): Promise<{ id: string; paths: SessionPaths }[]> {
  const buckets =
    cwd !== undefined
      ? [bucketOf(cwd)]
      : ((await ioOrAbsent(`reading ${ctx.root}`, undefined, () => ctx.fs.readdir(ctx.root))) ?? []).filter(
          isBucketName,
        );
  const found: { id: string; paths: SessionPaths }[] = [];
  for (const bucket of buckets.sort()) {
    const dir = sessionPaths(ctx.root, bucket, 'x').dir;
    const names = await ioOrAbsent(`reading ${dir}`, undefined, () => ctx.fs.readdir(dir));
    for (const name of names ?? []) {
      const id = idOfLogName(name);
      if (id !== undefined && isValidId(id)) found.push({ id, paths: sessionPaths(ctx.root, bucket, id) });
    }
  }
  return found;
}

/** list's view of one session; undefined when it vanished meanwhile. */
async function listedSummary(
  ctx: StoreContext,
  paths: SessionPaths,
  id: string,
): Promise<SessionSummary | undefined> {
  const stat = await ioOrAbsent(`inspecting ${paths.log}`, id, () => ctx.fs.lstat(paths.log));
  if (stat === undefined) return undefined;
  try {
    const summary = await currentSummary(ctx, paths, id, stat.size);
    if (summary.id !== id) throw foreignLog(paths.log, id, summary.id);
    return summary;
  } catch (error) {
    if (isTidemarkError(error, 'NOT_FOUND')) return undefined;
    throw error;
  }
}

async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  step: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await step(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
