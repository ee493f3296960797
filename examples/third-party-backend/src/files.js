// File steps of the json-dir store, all through core's FileSystem port (so that the fault harness
// can hand the store a failing or crashing file system): writing a whole file, publishing it with
// a rename, and the per-session lock file that makes one writer at a time across processes.
import { randomUUID } from 'node:crypto';
import { isENOENT, TidemarkError, toIoError } from '@tidemark/core';

/** @typedef {import('@tidemark/core').FileSystem} FileSystem */
/** @typedef {import('@tidemark/core').FileHandlePort} FileHandlePort */

/** Writes all of `bytes` at offset 0: a port write may store fewer bytes than asked. */
/** @param {FileHandlePort} handle @param {Uint8Array} bytes */
export async function writeAll(handle, bytes) {
  let done = 0;
  while (done < bytes.length) {
    const written = await handle.write(bytes, done, bytes.length - done, done);
    if (written <= 0) throw Object.assign(new Error('write stored no bytes'), { code: 'EIO' });
    done += written;
  }
}

/** Unlinks `path`; absent already is fine. @param {FileSystem} fs @param {string} path */
export async function removeIfPresent(fs, path) {
  try {
    await fs.unlink(path);
  } catch (error) {
    if (!isENOENT(error)) throw error;
  }
}

/** Reads a whole file; `undefined` only when it is absent. @param {FileSystem} fs @param {string} path */
export async function readIfPresent(fs, path) {
  try {
    return await fs.readFile(path);
  } catch (error) {
    if (isENOENT(error)) return undefined;
    throw error;
  }
}

// Tokens of the locks this process holds right now. A lock file naming this process with a token
// that is not here was left by a store that crashed or failed to remove it: it is stale. The set
// is per process, not per store, so that two stores of one process over one directory exclude
// each other as two processes do.
const heldTokens = new Set();

/** How long to wait for another writer's lock before giving up with a retryable IO error. */
const LOCK_WAIT_MS = 5_000;
/** A lock file older than this is stale whoever wrote it (a holder writes one file, then leaves). */
const LOCK_STALE_MS = 30_000;

/** @param {number} pid */
function processIsAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists and belongs to someone else.
    return /** @type {NodeJS.ErrnoException} */ (error).code === 'EPERM';
  }
}

/**
 * Whether the lock whose file held `bytes` may be broken: its holder is gone, or it is old. An
 * unreadable or half-written lock is left alone while it is young (its writer may be between open
 * and write).
 * @param {FileSystem} fs @param {string} path @param {Uint8Array} bytes
 */
async function isStale(fs, path, bytes) {
  const [pid, token] = new TextDecoder().decode(bytes).split(' ');
  const holder = Number(pid);
  if (Number.isSafeInteger(holder) && holder > 0 && token !== undefined && token !== '') {
    if (holder === process.pid) return !heldTokens.has(token);
    if (!processIsAlive(holder)) return true;
  }
  try {
    return Date.now() - (await fs.lstat(path)).mtimeMs > LOCK_STALE_MS;
  } catch (error) {
    if (isENOENT(error)) return false; // gone meanwhile: nothing to break, the next link decides
    throw error;
  }
}

/** Bytes equal, for telling whether the lock file still holds the stale lock it was judged by. */
const sameBytes = (a, b) => a.length === b.length && a.every((byte, i) => byte === b[i]);

/**
 * Removes the lock at `path` if it still holds `stale` (the lock judged stale), under the breaker
 * file `path.break`, so that breakers take turns: two writers that both found one dead holder's
 * lock must not each remove what the other linked in its place. Lock holders never remove another's
 * lock, so under the breaker the file cannot change between this check and the removal unless its
 * holder was judged stale by age alone while still alive (30 s). A breaker left by a killed process
 * is removed once its holder is gone. False when another breaker is at work (nothing done here).
 * @param {FileSystem} fs @param {string} path @param {Uint8Array} stale
 * @returns {Promise<boolean>}
 */
async function breakStale(fs, path, stale) {
  const breaker = `${path}.break`;
  let handle;
  try {
    handle = await fs.open(breaker, 'wx');
  } catch (error) {
    if (/** @type {NodeJS.ErrnoException} */ (error).code !== 'EEXIST') throw error;
    const other = await readIfPresent(fs, breaker);
    const holder = other === undefined ? Number.NaN : Number(new TextDecoder().decode(other));
    if (Number.isSafeInteger(holder) && holder > 0 && holder !== process.pid && !processIsAlive(holder))
      await removeIfPresent(fs, breaker);
    return false;
  }
  try {
    try {
      await writeAll(handle, new TextEncoder().encode(String(process.pid)));
    } finally {
      await handle.close();
    }
    const now = await readIfPresent(fs, path);
    if (now !== undefined && sameBytes(now, stale)) await removeIfPresent(fs, path);
  } finally {
    await removeIfPresent(fs, breaker);
  }
  return true;
}

/**
 * Writes the lock's content to a file of its own first and links it to `path`: a lock file is
 * never seen empty or half written (a writer killed between create and write would otherwise
 * leave one that looks held).
 * @param {FileSystem} fs @param {string} path @param {string} token
 */
async function prepareLock(fs, path, token) {
  const prepared = `${path}.${token}`;
  const handle = await fs.open(prepared, 'wx');
  try {
    await writeAll(handle, new TextEncoder().encode(`${process.pid} ${token}`));
  } finally {
    await handle.close();
  }
  return prepared;
}

/**
 * Runs `fn` holding the lock file `path` (linked into place, naming this process). Waits while
 * another live holder has it; breaks a stale one. Failures are IO errors naming the lock.
 * @template T
 * @param {FileSystem} fs @param {string} path @param {string} id @param {() => Promise<T>} fn
 * @returns {Promise<T>}
 */
export async function withLockFile(fs, path, id, fn) {
  const token = randomUUID();
  let prepared;
  try {
    prepared = await prepareLock(fs, path, token);
  } catch (error) {
    await removeIfPresent(fs, `${path}.${token}`).catch(() => undefined);
    throw toIoError(error, `preparing the lock ${path}`, id);
  }
  try {
    await acquire(fs, prepared, path, id, token);
  } finally {
    await removeIfPresent(fs, prepared).catch(() => undefined);
  }
  try {
    return await fn();
  } finally {
    heldTokens.delete(token);
    // A lock that cannot be removed is stale from now on: the next writer breaks it.
    await removeIfPresent(fs, path).catch(() => undefined);
  }
}

/**
 * Links `prepared` to `path` once no live holder has it; the token is then held.
 * @param {FileSystem} fs @param {string} prepared @param {string} path @param {string} id @param {string} token
 */
async function acquire(fs, prepared, path, id, token) {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    heldTokens.add(token);
    try {
      await fs.link(prepared, path);
      return;
    } catch (error) {
      heldTokens.delete(token);
      if (/** @type {NodeJS.ErrnoException} */ (error).code !== 'EEXIST')
        throw toIoError(error, `locking ${path}`, id);
    }
    let broken = false;
    try {
      const bytes = await readIfPresent(fs, path);
      // Released meanwhile: link again at once (removing by path here could take a new holder's lock).
      if (bytes === undefined) continue;
      if (await isStale(fs, path, bytes)) broken = await breakStale(fs, path, bytes);
    } catch (error) {
      throw toIoError(error, `checking the lock ${path}`, id);
    }
    if (broken) continue;
    if (Date.now() > deadline)
      throw new TidemarkError('IO', `session ${id} is locked by another writer (${path})`, {
        sessionId: id,
        retryable: true,
      });
    await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 8));
  }
}
