// Durable file primitives: reading a log through the scanner with bounded memory, creating
// directories durably, publishing files atomically, and setting bytes aside in quarantine.

import { join } from 'node:path';
import type { FileHandlePort, FileSystem } from '@tidemark/core';
import { errnoOf, toIoError } from '@tidemark/core';
import { io, quietly } from './errors.js';
import type { LogHeader } from './format.js';
import { QUARANTINE_DIR, quarantineName, tempPath } from './layout.js';
import { LogScanner, type ScanBatch, type ScanEnd, type ScanOptions } from './scan.js';

/** Bytes read per call while scanning: large enough for throughput, small enough to bound memory. */
export const READ_CHUNK_BYTES = 1024 * 1024;

/** Callbacks of {@link scanHandle}. */
export interface ScanCallbacks {
  /** Called once with the header, before any batch. */
  onHeader?: (header: LogHeader, endOffset: number) => void;
  /** Called for each committed batch in order; returning `false` stops the scan. */
  onBatch?: (batch: ScanBatch) => boolean | undefined;
}

/**
 * Scans a file from `options.start?.offset` (or 0) to its end through a {@link LogScanner}. Stops
 * early when `onBatch` returns `false` or a problem is found. Memory stays bounded by one chunk
 * plus the largest batch.
 */
export async function scanHandle(
  handle: FileHandlePort,
  what: string,
  sessionId: string,
  callbacks: ScanCallbacks,
  options: ScanOptions = {},
): Promise<ScanEnd & { stopped: boolean }> {
  const scanner = new LogScanner(options);
  const buffer = Buffer.allocUnsafe(READ_CHUNK_BYTES);
  let position = options.start?.offset ?? 0;
  let headerSeen = options.start !== undefined;
  for (;;) {
    const n = await io(what, sessionId, () => handle.read(buffer, 0, buffer.length, position));
    if (n === 0) break;
    position += n;
    const batches = scanner.push(buffer.subarray(0, n));
    if (!headerSeen) {
      const line = scanner.headerLine;
      if (line !== undefined) {
        headerSeen = true;
        callbacks.onHeader?.(line.header, line.endOffset);
      }
    }
    for (const batch of batches) {
      if (callbacks.onBatch?.(batch) === false) return { ...scanner.finish(), stopped: true };
    }
    if (scanner.failed) break;
  }
  return { ...scanner.finish(), stopped: false };
}

/**
 * Directories whose entry in their parent this process has made durable, per file system. A
 * directory found existing may have been created by a process that was killed (or whose parent
 * fsync failed) before its entry was synced: files published inside it would then vanish with it
 * at a power loss. So the first use of an existing directory syncs its parent once, too.
 */
const durableDirs = new WeakMap<FileSystem, Set<string>>();

/**
 * Creates directory `path` (0700) when missing, and makes its entry in `parent` durable (fsync of
 * the parent) the first time this process uses it, whether it created it or found it. An existing
 * non-directory is an IO error (ENOTDIR/EEXIST).
 */
export async function ensureDir(
  fs: FileSystem,
  path: string,
  parent: string,
  sessionId?: string,
): Promise<void> {
  let known = durableDirs.get(fs);
  if (known === undefined) {
    known = new Set();
    durableDirs.set(fs, known);
  }
  let exists = false;
  try {
    const stat = await fs.lstat(path);
    if (!stat.isDirectory())
      throw Object.assign(new Error(`${path} is not a directory`), { code: 'ENOTDIR' });
    exists = true;
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT') throw toIoError(error, `inspecting ${path}`, sessionId);
  }
  if (exists && known.has(path)) return;
  if (!exists) {
    try {
      await fs.mkdir(path, { mode: 0o700 });
    } catch (error) {
      // Another process created it meanwhile: check it is a directory, then sync as for any found.
      if (errnoOf(error) === 'EEXIST') return ensureDir(fs, path, parent, sessionId);
      throw toIoError(error, `creating ${path}`, sessionId);
    }
  }
  await io(`syncing ${parent}`, sessionId, () => fs.syncDir(parent));
  known.add(path);
}

/** Writes all of `bytes` at `position`, looping over short writes. */
export async function writeAll(handle: FileHandlePort, bytes: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const n = await handle.write(bytes, done, bytes.length - done, position + done);
    if (n <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    done += n;
  }
}

/**
 * Copies `length` bytes at `offset` of `source` into a new file in `<root>/.quarantine/`, fsyncs it
 * and its directory, and returns its path. Called before a log is truncated, so that a repair
 * destroys nothing.
 */
export async function quarantineRange(
  fs: FileSystem,
  root: string,
  sessionId: string,
  kind: 'torn' | 'tail',
  source: FileHandlePort,
  offset: number,
  length: number,
): Promise<string> {
  const dir = join(root, QUARANTINE_DIR);
  await ensureDir(fs, dir, root, sessionId);
  const path = join(dir, quarantineName(sessionId, kind));
  const out = await io(`creating ${path}`, sessionId, () => fs.open(path, 'wx', 0o600));
  try {
    const buffer = new Uint8Array(Math.min(READ_CHUNK_BYTES, Math.max(length, 1)));
    let copied = 0;
    while (copied < length) {
      const want = Math.min(buffer.length, length - copied);
      const n = await io('reading data to quarantine', sessionId, () =>
        source.read(buffer, 0, want, offset + copied),
      );
      if (n === 0) break; // the file is shorter than scanned: nothing more to keep
      await io(`writing ${path}`, sessionId, () => writeAll(out, buffer.subarray(0, n), copied));
      copied += n;
    }
    await io(`syncing ${path}`, sessionId, () => out.sync());
    await io(`closing ${path}`, sessionId, () => out.close());
  } catch (error) {
    await quietly(() => out.close());
    throw toIoError(error, `quarantining into ${path}`, sessionId);
  }
  await io(`syncing ${dir}`, sessionId, () => fs.syncDir(dir));
  return path;
}

/** Writes `text` as a new quarantine file (fsynced, directory fsynced) and returns its path. */
export async function quarantineText(
  fs: FileSystem,
  root: string,
  sessionId: string,
  kind: 'torn' | 'tail',
  text: string,
): Promise<string> {
  const dir = join(root, QUARANTINE_DIR);
  await ensureDir(fs, dir, root, sessionId);
  const path = join(dir, quarantineName(sessionId, kind));
  const out = await io(`creating ${path}`, sessionId, () => fs.open(path, 'wx', 0o600));
  try {
    await io(`writing ${path}`, sessionId, () => writeAll(out, Buffer.from(text, 'utf8'), 0));
    await io(`syncing ${path}`, sessionId, () => out.sync());
    await io(`closing ${path}`, sessionId, () => out.close());
  } catch (error) {
    await quietly(() => out.close());
    throw error;
  }
  await io(`syncing ${dir}`, sessionId, () => fs.syncDir(dir));
  return path;
}

/**
 * Publishes `bytes` as a new file at `path` atomically: exclusive temp file (0600) in `dir`, write,
 * fsync, then `link` (fails with EEXIST when `path` exists) or `rename` (replaces it), unlink the
 * temp, fsync `dir`. Returns false when `link` met an existing path.
 */
export async function publishFile(
  fs: FileSystem,
  dir: string,
  path: string,
  write: (handle: FileHandlePort) => Promise<void>,
  how: 'link' | 'rename',
  sessionId: string,
): Promise<boolean> {
  const temp = tempPath(dir);
  const handle = await io(`creating ${temp}`, sessionId, () => fs.open(temp, 'wx', 0o600));
  try {
    await io(`writing ${temp}`, sessionId, () => write(handle));
    await io(`syncing ${temp}`, sessionId, () => handle.sync());
    await io(`closing ${temp}`, sessionId, () => handle.close());
  } catch (error) {
    await quietly(() => handle.close());
    await quietly(() => fs.unlink(temp));
    throw toIoError(error, `writing ${temp}`, sessionId);
  }
  if (how === 'rename') {
    try {
      await fs.rename(temp, path);
    } catch (error) {
      await quietly(() => fs.unlink(temp));
      throw toIoError(error, `replacing ${path}`, sessionId);
    }
  } else {
    try {
      await fs.link(temp, path);
    } catch (error) {
      await quietly(() => fs.unlink(temp));
      if (errnoOf(error) === 'EEXIST') return false;
      throw toIoError(error, `publishing ${path}`, sessionId);
    }
    // A leftover temp file is harmless (never an id), so a failed unlink does not fail the publish.
    await quietly(() => fs.unlink(temp));
    try {
      await fs.syncDir(dir);
    } catch (error) {
      // Not durable, so not acknowledged: take the new name back so that a retry starts clean.
      await quietly(() => fs.unlink(path));
      throw toIoError(error, `syncing ${dir}`, sessionId);
    }
    return true;
  }
  await io(`syncing ${dir}`, sessionId, () => fs.syncDir(dir));
  return true;
}
