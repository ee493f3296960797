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
export function locate(ctx: StoreContext, id: string): Promise<SessionPaths | undefined> {
  return findInBuckets(
    ctx,
    id,
    [],
    (bucket) => logIn(ctx, bucket, id),
    (root) => ctx.fs.readdir(root),
  );
}

/**
 * The log of a materialized session opened for reading with its paths, or undefined when it truly
 * does not exist: {@link locate}'s lookup in the same order, each bucket tried by opening the log
 * rather than by lstat and then opening it (one file system round trip less per read). ENOENT
 * alone counts as absence from a bucket; any other fault is IO, as in {@link locate}.
 */
export function openLocated(
  ctx: StoreContext,
  id: string,
): Promise<{ paths: SessionPaths; handle: FileHandlePort } | undefined> {
  // The bucket without a cwd sorts before every `cwd-` bucket ('_' < 'c'): the first in name
  // order when it holds the log, found without listing the root.
  return findInBuckets(
    ctx,
    id,
    [NO_CWD_BUCKET],
    (bucket) => openIn(ctx, bucket, id),
    (root) => readdirForRead(ctx.fs, root),
  );
}

/**
 * The first answer of `probe` for a bucket of `id`: the remembered one, its reservation's, each of
 * `extra`, then every other bucket in name order; the remembered bucket is forgotten when none answers.
 */
async function findInBuckets<T>(
  ctx: StoreContext,
  id: string,
  extra: readonly string[],
  probe: (bucket: string) => Promise<T | undefined>,
  readdir: (path: string) => Promise<string[]>,
): Promise<T | undefined> {
  const tried = new Set<string>();
  const reservation = ctx.reservations.get(id);
  const hints = [ctx.buckets.get(id), reservation !== undefined ? bucketOf(reservation.meta.cwd) : undefined];
  for (const bucket of [...hints, ...extra]) {
    if (bucket === undefined || tried.has(bucket)) continue;
    tried.add(bucket);
    const found = await probe(bucket);
    if (found !== undefined) return found;
  }
  const found = await firstInBuckets(ctx, id, tried, probe, readdir);
  if (found === undefined) ctx.buckets.delete(id);
  return found;
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
export function logInBuckets(
  ctx: StoreContext,
  id: string,
  skip: ReadonlySet<string>,
): Promise<SessionPaths | undefined> {
  return firstInBuckets(
    ctx,
    id,
    skip,
    (bucket) => logIn(ctx, bucket, id),
    (root) => ctx.fs.readdir(root),
  );
}

/** The first answer of `probe` for the buckets under the root not in `skip`, in name order. */
async function firstInBuckets<T>(
  ctx: StoreContext,
  id: string,
  skip: ReadonlySet<string>,
  probe: (bucket: string) => Promise<T | undefined>,
  readdir: (path: string) => Promise<string[]>,
): Promise<T | undefined> {
  const names = await ioOrAbsent(`reading ${ctx.root}`, id, () => readdir(ctx.root));
  for (const bucket of (names ?? []).filter(isBucketName).sort()) {
    if (skip.has(bucket)) continue;
    const found = await probe(bucket);
    if (found !== undefined) return found;
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
