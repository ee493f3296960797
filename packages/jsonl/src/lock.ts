// One writer per session, across processes and across store instances in one process.
//
// A writer holds `<id>.lock`, created exclusively ('wx') and holding its pid, host and a random
// token, until it closes or goes idle (lockIdleMs, see writers.ts). Another process meeting a live
// lock gets CONFLICT (retryable). A lock whose pid is dead (same host) is taken over under a
// takeover guard, `<id>.lock.takeover.<token>`:
// only a taker whose guard is the only live one removes a lock it did not create, and only after
// reading it again and finding the very bytes it judged stale. Without it, two takers could each
// remove "the stale lock" while one of them was already the fresh lock of a third writer, leaving
// two writers of one session. Creating a lock needs no guard: it only succeeds on an empty path.
// Inside one process, an idle holder hands its lock over to another store instance on request
// (a busy one, with an append in flight, makes the requester fail with CONFLICT), so two
// instances in one process behave like the reference model: sequential appends from both work,
// and racing appends never both win a seq.
import { randomBytes } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { errnoOf, errors, type FileSystem, type TidemarkError, toIoError } from '@tidemark/core';
import { io, ioOrAbsent, quietly } from './errors.js';
import { tempPath } from './layout.js';

/** What the lock file says. */
interface LockRecord {
  pid: number;
  host: string;
  token: string;
  /** The writer's PID namespace (Linux, `/proc/self/ns/pid`), when known. */
  ns?: string;
}

/** A lock held in this process, with the means to hand it over. */
export interface LockHolder {
  /** True while an operation of the holder needs the lock. */
  busy(): boolean;
  /** Gives the lock up (flushing whatever the holder owes first). */
  release(): Promise<void>;
}

/** A held lock. */
export interface HeldLock {
  readonly path: string;
  readonly token: string;
  /** Removes the lock file if it is still ours. */
  release(): Promise<void>;
}

/**
 * Locks held by live store instances of this process, by token: the in-process hand-over
 * registry. Keyed by token, not path, so that two spellings of one root (relative, through a
 * symlink) or two FileSystem objects over one disk still find each other.
 */
interface Registry {
  liveTokens: Map<string, LockHolder>;
  liveGuards: Set<string>;
}

/**
 * The registry is one per process, not per copy of this module: two installed copies of the
 * package in one process must see each other's locks, or each would take the other's for one
 * left by a dead process with our pid and take it over.
 */
const registry: Registry = (() => {
  const key = Symbol.for('tidemark.jsonl.lock-registry.v1');
  const slot = globalThis as unknown as Record<symbol, Registry | undefined>;
  slot[key] ??= { liveTokens: new Map(), liveGuards: new Set() };
  return slot[key];
})();

const liveTokens = registry.liveTokens;

const HOST = hostname();

/**
 * This process's PID namespace. Pids are compared only within one: a writer in another container
 * or sandbox on this host (same host name, say with host networking) may have our very pid, or a
 * pid that means another process here, so its lock or guard is never judged by pid.
 */
const PID_NS: string | undefined = (() => {
  try {
    return readlinkSync('/proc/self/ns/pid');
  } catch {
    return undefined; // not Linux: pids are compared as before
  }
})();

/** Whether `record` was written in another PID namespace of this host (so its pid says nothing). */
function otherPidNamespace(record: LockRecord): boolean {
  return record.ns !== undefined && PID_NS !== undefined && record.ns !== PID_NS;
}

/** A record for a lock or guard of this process. */
function ownRecord(): LockRecord {
  return {
    pid: process.pid,
    host: HOST,
    token: randomBytes(12).toString('hex'),
    ...(PID_NS !== undefined && { ns: PID_NS }),
  };
}

/** Whether a process is alive. EPERM means it exists but belongs to someone else. */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errnoOf(error) === 'EPERM';
  }
}

function parseRecord(bytes: Uint8Array): LockRecord | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(bytes).toString('utf8'));
    if (typeof value !== 'object' || value === null) return undefined;
    const { pid, host, token, ns } = value as Record<string, unknown>;
    if (
      typeof pid === 'number' &&
      Number.isSafeInteger(pid) &&
      typeof host === 'string' &&
      typeof token === 'string'
    ) {
      return { pid, host, token, ...(typeof ns === 'string' && { ns }) };
    }
  } catch {
    // unreadable content: handled by the caller
  }
  return undefined;
}

/**
 * Acquires the writer lock at `path` for session `id`.
 * @throws TidemarkError CONFLICT when another live writer holds it; IO for storage faults.
 */
export async function acquireLock(
  fs: FileSystem,
  path: string,
  id: string,
  holder: LockHolder,
): Promise<HeldLock> {
  const record = ownRecord();
  const content = Buffer.from(`${JSON.stringify(record)}\n`, 'utf8');
  for (let attempt = 0; attempt < 4; attempt++) {
    // Registered before the lock exists: from the instant the link lands, another instance of
    // this process that reads the lock must find its holder live, never "our pid, unknown token"
    // (which it would take for a failed release and take over).
    liveTokens.set(record.token, holder);
    let created = false;
    try {
      created = await tryCreate(fs, path, id, content);
    } finally {
      if (!created) liveTokens.delete(record.token);
    }
    if (created) {
      return {
        path,
        token: record.token,
        release: () => releaseLock(fs, path, record.token, id),
      };
    }
    await clearIfStale(fs, path, id);
  }
  throw errors.conflict(`session ${id} is locked by another writer (${path})`, id, true);
}

/**
 * Creates the lock with its content in one step: the record is written to an exclusive temp file
 * that is then linked to the lock path (EEXIST: held). A writer killed at any instant therefore
 * never leaves an empty lock that would look like one being written.
 */
async function tryCreate(fs: FileSystem, path: string, id: string, content: Uint8Array): Promise<boolean> {
  const temp = tempPath(dirname(path));
  const handle = await io(`creating ${temp}`, id, () => fs.open(temp, 'wx', 0o600));
  try {
    try {
      let done = 0;
      while (done < content.length) {
        const n = await handle.write(content, done, content.length - done, done);
        if (n <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
        done += n;
      }
    } finally {
      await quietly(() => handle.close());
    }
    await fs.link(temp, path);
    return true;
  } catch (error) {
    if (errnoOf(error) === 'EEXIST') return false;
    throw errorFor(error, `creating lock ${path}`, id);
  } finally {
    await quietly(() => fs.unlink(temp));
  }
}

function errorFor(error: unknown, what: string, id: string): TidemarkError {
  return toIoError(error, what, id);
}

/** Removes the lock at `path` when its holder is gone (or hands it over in-process); else CONFLICT. */
async function clearIfStale(fs: FileSystem, path: string, id: string): Promise<void> {
  const bytes = await ioOrAbsent(`reading lock ${path}`, id, () => fs.readFile(path));
  if (bytes === undefined) return; // released meanwhile: try again
  const record = parseRecord(bytes);
  if (record === undefined) {
    // Locks are published complete (link of a written file), so unreadable content can only be
    // the remains of a power loss, after which no holder is alive: stale.
  } else if (record.host !== HOST || otherPidNamespace(record)) {
    throw errors.conflict(
      `session ${id} is locked by process ${record.pid} on ${record.host}${record.host === HOST ? ' in another PID namespace' : ''} (${path})`,
      id,
      true,
    );
  } else if (record.pid === process.pid) {
    const holder = liveTokens.get(record.token);
    if (holder !== undefined) {
      if (holder.busy())
        throw errors.conflict(`session ${id} is being written by another store instance`, id, true);
      await holder.release();
      return;
    }
    // Our pid, but no live instance holds it: its release failed, or a process before us had our pid.
  } else if (isProcessAlive(record.pid)) {
    throw errors.conflict(
      `session ${id} is locked by process ${record.pid} on ${record.host} (${path})`,
      id,
      true,
    );
  }
  await takeOver(fs, path, id, bytes);
}

/** Tokens of takeover guards this process holds right now (a guard of ours not in here is dead). */
const liveGuards = registry.liveGuards;

/**
 * Removes the stale lock at `path`, holding a takeover guard. Returns without removing anything
 * when the lock changed since it was judged stale (the caller looks at it again).
 *
 * Guards are files `<lock>.takeover.<token>`, each created exclusively under a name of its own,
 * so no taker ever has to remove another's guard to proceed. A taker creates its guard, then
 * lists the guards: if any other is live it withdraws (CONFLICT, retryable). Of two takers, the
 * one that listed second sees the other's guard, so at most one proceeds (create, then check).
 * Dead guards (holder process gone) are ignored and removed, which is safe because nothing depends
 * on their presence. A live holder's guard never expires, however slow its takeover (a stopped
 * process, a stalled disk): expiring it would let a second taker in while the first may still
 * remove the lock.
 * @throws TidemarkError CONFLICT (retryable) when another live taker holds a guard.
 */
async function takeOver(fs: FileSystem, path: string, id: string, staleBytes: Uint8Array): Promise<void> {
  const record = ownRecord();
  for (const [left, leftFs] of [...leftGuards]) await removeGuard(leftFs, left);
  const prefix = `${basename(path)}${GUARD_INFIX}`;
  const guard = join(dirname(path), `${prefix}${record.token}`);
  liveGuards.add(record.token); // before the guard exists, as for locks
  try {
    if (!(await tryCreate(fs, guard, id, Buffer.from(`${JSON.stringify(record)}\n`, 'utf8'))))
      throw errors.conflict(`session ${id}: takeover guard ${guard} exists`, id, true); // random name: not expected
    try {
      const names = await io(`reading ${dirname(path)}`, id, () => fs.readdir(dirname(path)));
      for (const name of names) {
        if (!isGuardName(name, prefix) || name === basename(guard)) continue;
        const other = join(dirname(path), name);
        if (await isLiveGuard(fs, other, id))
          throw errors.conflict(`session ${id} is being taken over by another writer (${other})`, id, true);
        await quietly(() => fs.unlink(other)); // dead: ignored by everyone, so safe to remove
      }
      // Under the only live guard nobody else removes the lock, and its dead holder cannot
      // release it: if it still holds the stale bytes, it is the stale lock.
      const current = await ioOrAbsent(`reading lock ${path}`, id, () => fs.readFile(path));
      if (current === undefined || !Buffer.from(current).equals(Buffer.from(staleBytes))) return;
      await ioOrAbsent(`removing stale lock ${path}`, id, () => fs.unlink(path));
    } finally {
      // Dead from here on for this process (not in liveGuards). Other processes see our pid alive
      // and would take a guard left behind for live, so a failed removal is retried at this
      // process's next takeover of any lock.
      liveGuards.delete(record.token);
      await removeGuard(fs, guard);
    }
  } finally {
    liveGuards.delete(record.token);
  }
}

/** Guards of this process whose removal failed, with the file system to retry on. */
const leftGuards = new Map<string, FileSystem>();

/** Removes a guard of this process; remembers it for a later retry when that fails. */
async function removeGuard(fs: FileSystem, guard: string): Promise<void> {
  try {
    await fs.unlink(guard);
    leftGuards.delete(guard);
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') leftGuards.delete(guard);
    else leftGuards.set(guard, fs);
  }
}

/** Between a lock's name and a guard's token. */
const GUARD_INFIX = '.takeover.';

/** A guard token: 12 random bytes in hex. */
const GUARD_TOKEN = /^[0-9a-f]{24}$/;

/**
 * Whether `name` is a guard of the lock whose guards start with `prefix` (pure). Exactly a token
 * after the prefix: ids may contain `.lock.takeover.` or `.tmp` themselves, and the lock of such a
 * session (which ends in `.lock`) or a temp file (which starts with a dot) must never be taken for
 * a guard of another session's lock.
 */
export function isGuardName(name: string, prefix: string): boolean {
  return name.startsWith(prefix) && GUARD_TOKEN.test(name.slice(prefix.length));
}

/** Whether the guard at `guard` belongs to a takeover still under way. */
async function isLiveGuard(fs: FileSystem, guard: string, id: string): Promise<boolean> {
  const bytes = await ioOrAbsent(`reading lock ${guard}`, id, () => fs.readFile(guard));
  if (bytes === undefined) return false; // finished meanwhile
  const record = parseRecord(bytes);
  if (record === undefined) return false; // published complete, so only a power loss garbles one
  if (record.host !== HOST || otherPidNamespace(record)) return true;
  if (record.pid === process.pid) return liveGuards.has(record.token);
  return isProcessAlive(record.pid);
}

async function releaseLock(fs: FileSystem, path: string, token: string, id: string): Promise<void> {
  // The token stays registered until the file is gone: a requester in this process that met it
  // meanwhile would otherwise judge it abandoned, take it over and create its own lock, which the
  // unlink below would then remove from under it.
  try {
    const bytes = await ioOrAbsent(`reading lock ${path}`, id, () => fs.readFile(path));
    if (bytes === undefined) return;
    if (parseRecord(bytes)?.token !== token) return; // not ours any more: leave it alone
    await ioOrAbsent(`removing lock ${path}`, id, () => fs.unlink(path));
  } finally {
    liveTokens.delete(token);
  }
}
