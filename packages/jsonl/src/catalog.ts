// Where sessions live under a store root: which bucket holds a session's log, and the durable
// creation of the root. (Listing is list-scan.ts and catalog-list.ts.)
import { dirname } from 'node:path';
import { errnoOf, type FileHandlePort, toIoError } from '@tidemark/core';
import type { StoreContext } from './context.js';
import { io, ioOrAbsent } from './errors.js';
import { bucketOf, isBucketName, NO_CWD_BUCKET, type SessionPaths, sessionPaths } from './layout.js';
import { openForRead, readdirForRead } from './read-handle.js';

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

/**
 * The log of a materialized session opened for reading with its paths, or undefined when it truly
 * does not exist: {@link locate}'s lookup in the same order, each bucket tried by opening the log
 * rather than by lstat and then opening it (one file system round trip less per read). ENOENT
 * alone counts as absence from a bucket; any other fault is IO, as in {@link locate}.
 */
export async function openLocated(
  ctx: StoreContext,
  id: string,
): Promise<{ paths: SessionPaths; handle: FileHandlePort } | undefined> {
  const tried = new Set<string>();
  const reservation = ctx.reservations.get(id);
  const hints = [ctx.buckets.get(id), reservation !== undefined ? bucketOf(reservation.meta.cwd) : undefined];
  for (const bucket of hints) {
    if (bucket === undefined || tried.has(bucket)) continue;
    tried.add(bucket);
    const found = await openIn(ctx, bucket, id);
    if (found !== undefined) return found;
  }
  // The bucket without a cwd sorts before every `cwd-` bucket ('_' < 'c'): the first in name
  // order when it holds the log, found without listing the root.
  if (!tried.has(NO_CWD_BUCKET)) {
    tried.add(NO_CWD_BUCKET);
    const found = await openIn(ctx, NO_CWD_BUCKET, id);
    if (found !== undefined) return found;
  }
  const names = await ioOrAbsent(`reading ${ctx.root}`, id, () => readdirForRead(ctx.fs, ctx.root));
  for (const bucket of (names ?? []).filter(isBucketName).sort()) {
    if (tried.has(bucket)) continue;
    const found = await openIn(ctx, bucket, id);
    if (found !== undefined) return found;
  }
  ctx.buckets.delete(id);
  return undefined;
}

async function openIn(ctx: StoreContext, bucket: string, id: string) {
  const paths = sessionPaths(ctx.root, bucket, id);
  const handle = await ioOrAbsent(`opening ${paths.log}`, id, () => openForRead(ctx.fs, paths.log));
  if (handle === undefined) return undefined;
  ctx.buckets.set(id, bucket);
  return { paths, handle };
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
