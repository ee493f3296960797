// Listing by looking at every session: each log in the buckets, summarized through its sidecar.
// This is what the catalog caches (catalog-list.ts); it is also list itself for a store without
// lock files (`lock: 'none'`), whose catalog could not tell which sessions are being written.
import {
  isTidemarkError,
  isValidId,
  type ListProblem,
  pageOf,
  type SessionPage,
  type SessionSummary,
  type TidemarkError,
  toIoError,
  type ValidListQuery,
} from '@tidemark/core';
import type { CatalogEntry } from './catalog-index.js';
import type { StoreContext } from './context.js';
import { foreignLog, ioOrAbsent } from './errors.js';
import { bucketOf, idOfLogName, isBucketName, type SessionPaths, sessionPaths } from './layout.js';
import { currentSummary } from './summary.js';

/** Summaries of one list are computed this many at a time. */
export const LIST_PARALLELISM = 16;

/** One page of sessions: every log in the buckets the query names, summarized through its sidecar. */
export async function listByScan(ctx: StoreContext, q: ValidListQuery): Promise<SessionPage> {
  const buckets = q.cwd !== undefined ? [bucketOf(q.cwd)] : await bucketNames(ctx);
  const found = await logsInBuckets(ctx, buckets ?? []);
  const summaries: SessionSummary[] = [];
  const problems: ListProblem[] = [];
  await forEachLimited(found, LIST_PARALLELISM, async ({ id, bucket }) => {
    const described = await describe(ctx, bucket, id);
    if (described.kind === 'entry') summaries.push(described.entry.summary!);
    else if (described.kind === 'problem') problems.push({ id, error: described.error });
  });
  // Gathering took a while: a store closed meanwhile answers CLOSED, not a page.
  ctx.assertOpen();
  return pageOf(summaries, q, problems);
}

/** The bucket names under the root; undefined when the root does not exist. */
export async function bucketNames(ctx: StoreContext): Promise<string[] | undefined> {
  const names = await ioOrAbsent(`reading ${ctx.root}`, undefined, () => ctx.fs.readdir(ctx.root));
  return names?.filter(isBucketName).sort();
}

/** The ids of the logs in `bucket` (none when it does not exist). */
export async function logIdsIn(ctx: StoreContext, bucket: string): Promise<string[]> {
  const dir = sessionPaths(ctx.root, bucket, 'x').dir;
  const names = await ioOrAbsent(`reading ${dir}`, undefined, () => ctx.fs.readdir(dir));
  const ids: string[] = [];
  for (const name of names ?? []) {
    const id = idOfLogName(name);
    if (id !== undefined && isValidId(id)) ids.push(id);
  }
  return ids;
}

/** Every log in `buckets`, in bucket name order. */
export async function logsInBuckets(
  ctx: StoreContext,
  buckets: readonly string[],
): Promise<{ id: string; bucket: string }[]> {
  const found: { id: string; bucket: string }[] = [];
  for (const bucket of [...buckets].sort()) {
    for (const id of await logIdsIn(ctx, bucket)) found.push({ id, bucket });
  }
  return found;
}

/** What a look at one session found. */
export type Described =
  | { kind: 'entry'; entry: CatalogEntry }
  | { kind: 'problem'; entry: CatalogEntry; error: TidemarkError }
  | { kind: 'absent' };

/** A sidecar's version as lstat sees it: it is replaced by rename, so any rewrite changes it. */
export async function sidecarStamp(ctx: StoreContext, paths: SessionPaths, id: string): Promise<string> {
  const stat = await ioOrAbsent(`inspecting ${paths.summary}`, id, () => ctx.fs.lstat(paths.summary));
  return stat === undefined ? '' : `${stat.size}:${stat.mtimeMs}`;
}

/**
 * list's view of one session, as a catalog entry: its summary as of the log length and sidecar
 * version seen first (so that a change after the look shows as a mismatch later), a problem for
 * a session that cannot be described, or absent when its log vanished.
 */
export async function describe(ctx: StoreContext, bucket: string, id: string): Promise<Described> {
  const paths = sessionPaths(ctx.root, bucket, id);
  const problem = (error: unknown): Described => ({
    kind: 'problem',
    entry: { id, bucket, logSize: -1, sidecar: '', summary: undefined },
    error: toIoError(error, `summarizing ${id}`, id),
  });
  try {
    const sidecar = await sidecarStamp(ctx, paths, id);
    const stat = await ioOrAbsent(`inspecting ${paths.log}`, id, () => ctx.fs.lstat(paths.log));
    if (stat === undefined) return { kind: 'absent' };
    const summary = await currentSummary(ctx, paths, id, stat.size);
    if (summary.id !== id) throw foreignLog(paths.log, id, summary.id);
    return { kind: 'entry', entry: { id, bucket, logSize: stat.size, sidecar, summary } };
  } catch (error) {
    if (isTidemarkError(error, 'NOT_FOUND')) return { kind: 'absent' };
    return problem(error);
  }
}

/** True when the log and sidecar of `entry` are still what the entry was taken from. */
export async function isCurrent(ctx: StoreContext, entry: CatalogEntry): Promise<boolean> {
  const paths = sessionPaths(ctx.root, entry.bucket, entry.id);
  const [stat, sidecar] = await Promise.all([
    ioOrAbsent(`inspecting ${paths.log}`, entry.id, () => ctx.fs.lstat(paths.log)),
    sidecarStamp(ctx, paths, entry.id),
  ]);
  return stat !== undefined && stat.size === entry.logSize && sidecar === entry.sidecar;
}

/** Runs `step` over `items`, `limit` at a time. */
export async function forEachLimited<T>(
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
