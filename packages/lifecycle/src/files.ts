// Small file helpers with the permissions of contract §5: directories 0700, files 0600, replacement
// through an exclusive temp file + fsync + rename + directory fsync, so that a crash leaves the
// old or the new file, never a broken one.
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { isENOENT, TidemarkError, toIoError } from '@tidemark/core';
import lockfile from 'proper-lockfile';

/** Creates `dir` (and parents) with mode 0700. */
export async function ensurePrivateDir(dir: string): Promise<void> {
  try {
    await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw toIoError(error, `creating directory ${dir}`);
  }
}

/** Reads a UTF-8 file; undefined only when it does not exist (ENOENT), IO error otherwise. */
export async function readTextIfExists(path: string): Promise<string | undefined> {
  try {
    return await fsp.readFile(path, 'utf8');
  } catch (error) {
    if (isENOENT(error)) return undefined;
    throw toIoError(error, `reading ${path}`);
  }
}

/** Replaces `path` atomically with `text`, mode 0600. */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  const dir = dirname(path);
  await ensurePrivateDir(dir);
  const temp = join(dir, `.${basename(path)}.${randomBytes(8).toString('hex')}.tmp`);
  let handle: fsp.FileHandle | undefined;
  try {
    handle = await fsp.open(temp, 'wx', 0o600);
    await handle.writeFile(text, 'utf8');
    await handle.sync();
    await handle.close();
    handle = undefined;
    await fsp.rename(temp, path);
    await syncDir(dir);
  } catch (error) {
    await handle?.close().catch(() => undefined);
    await fsp.rm(temp, { force: true }).catch(() => undefined);
    throw toIoError(error, `writing ${path}`);
  }
}

/** fsync of a directory, so that a rename or create in it survives a power loss. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await fsp.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Appends one line to `path` (created 0600) and fsyncs it before resolving. A torn last line left
 * by a crash or a failed write is closed with a newline first, so the new line never joins it
 * (the fragment stays a reported bad line). A newly created file gets its directory fsynced.
 */
export async function appendLineDurably(path: string, line: string): Promise<void> {
  const dir = dirname(path);
  await ensurePrivateDir(dir);
  let handle: fsp.FileHandle | undefined;
  try {
    handle = await fsp.open(path, 'a+', 0o600);
    const { size } = await handle.stat();
    let text = `${line}\n`;
    if (size > 0) {
      const last = Buffer.alloc(1);
      await handle.read(last, 0, 1, size - 1);
      if (last[0] !== 0x0a) text = `\n${text}`;
    }
    await handle.writeFile(text, 'utf8');
    await handle.sync();
    if (size === 0) await syncDir(dir);
  } catch (error) {
    throw toIoError(error, `appending to ${path}`);
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/**
 * Runs `fn` holding an inter-process lock on `path` (a directory `<path>.lock`, proper-lockfile),
 * so that read-modify-write of a small shared file by two processes cannot lose either change.
 * The lock is stale after 10 s without a heartbeat (a killed holder), and waited for up to about
 * 2 s; still held then, it is CONFLICT (retryable). A lock found compromised while held (another
 * process took it over as stale) makes the call IO, since its write may have raced another one.
 */
export async function withFileLock<T>(path: string, fn: () => Promise<T>): Promise<T> {
  await ensurePrivateDir(dirname(path));
  let compromised: Error | undefined;
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(path, {
      realpath: false, // the file itself may not exist yet
      lockfilePath: `${path}.lock`,
      stale: 10_000,
      retries: { retries: 25, factor: 1.3, minTimeout: 5, maxTimeout: 200, randomize: true },
      onCompromised: (error) => {
        compromised = error;
      },
    });
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ELOCKED')
      throw new TidemarkError('CONFLICT', `${path} is locked by another process; try again`, {
        retryable: true,
        cause: error,
      });
    throw toIoError(error, `locking ${path}`);
  }
  try {
    const result = await fn();
    if (compromised !== undefined)
      throw toIoError(compromised, `the lock on ${path} was taken over while held`);
    return result;
  } finally {
    await release().catch(() => undefined); // a compromised lock is no longer ours to release
  }
}
