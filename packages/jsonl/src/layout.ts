// Where things live under the store root. Pure: names and paths only.
//
//   <root>/<bucket>/<id>.jsonl           the log
//   <root>/<bucket>/<id>.summary.json    the summary sidecar
//   <root>/<bucket>/.tmp-<random>        temporary files (never a valid id: ids cannot start with '.')
//   <root>/.locks/<id>.lock              the writer lock: one per id, whatever its bucket, so that
//                                        two writers that create one id with different cwds meet
//   <root>/.quarantine/                  what repairs take out of logs
import { createHash, randomBytes } from 'node:crypto';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Bucket of sessions without a working directory. */
export const NO_CWD_BUCKET = '_no-cwd';
/** Directory of quarantined fragments, under the root. */
export const QUARANTINE_DIR = '.quarantine';
/** Directory of writer locks, under the root. */
export const LOCK_DIR = '.locks';

const BUCKET_PATTERN = /^(cwd-[0-9a-f]{16}|_no-cwd)$/;

/** The default store root: `$TIDEMARK_HOME/sessions`, else `~/.tidemark/sessions`. */
export function defaultRoot(env: NodeJS.ProcessEnv = process.env): string {
  const home = env.TIDEMARK_HOME;
  return home !== undefined && home !== ''
    ? join(home, 'sessions')
    : join(homedir(), '.tidemark', 'sessions');
}

/** The bucket of a working directory: `cwd-` + the first 16 hex digits of sha256(cwd). */
export function bucketOf(cwd: string | undefined): string {
  if (cwd === undefined) return NO_CWD_BUCKET;
  return `cwd-${createHash('sha256').update(cwd, 'utf8').digest('hex').slice(0, 16)}`;
}

/** True for directory names that are buckets (everything else under the root is ignored). */
export function isBucketName(name: string): boolean {
  return BUCKET_PATTERN.test(name);
}

const LOG_SUFFIX = '.jsonl';

/** The session id of a log file name, or undefined for any other name. */
export function idOfLogName(name: string): string | undefined {
  if (!name.endsWith(LOG_SUFFIX) || name.startsWith('.')) return undefined;
  return name.slice(0, -LOG_SUFFIX.length);
}

/** Paths of one session. The id must be valid (checked by callers): it cannot contain separators. */
export interface SessionPaths {
  bucket: string;
  dir: string;
  log: string;
  summary: string;
  lock: string;
}

/** Paths of session `id` in `bucket`. */
export function sessionPaths(root: string, bucket: string, id: string): SessionPaths {
  const dir = join(root, bucket);
  return {
    bucket,
    dir,
    log: join(dir, `${id}${LOG_SUFFIX}`),
    summary: join(dir, `${id}.summary.json`),
    lock: join(root, LOCK_DIR, `${id}.lock`),
  };
}

/** An unpredictable temporary file name in `dir` (opened with 'wx', so never an existing path). */
export function tempPath(dir: string): string {
  return join(dir, `.tmp-${randomBytes(12).toString('hex')}`);
}

/** A quarantine file name for data taken out of session `id`. */
export function quarantineName(id: string, kind: 'torn' | 'tail', now: Date = new Date()): string {
  const stamp = now.toISOString().replace(/[-:.]/g, '');
  return `${id}.${stamp}.${randomBytes(4).toString('hex')}.${kind === 'torn' ? 'torn.bin' : 'tail.jsonl'}`;
}
