// The catalog file, `<root>/.catalog.jsonl`: a cache of every session's summary so that `list`
// reads one file instead of every sidecar. Never the truth: the logs and sidecars are.
//
// The first line is a header with a random token that names this very file (a rebuild or a
// compaction writes a new file and renames it over the old one, so the token tells a reader, and
// an appender, whether the path still holds the file it knows). Every later record is written as
// "\n" + one JSON object, appended (O_APPEND) by any instance or process: a record torn by a crash
// is then one bad line that the next record's newline closes, skipped by readers.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { FileHandlePort, FileSystem } from '@tidemark/core';
import type { CatalogEntry, CatalogIndex, CatalogState } from './catalog-index.js';
import { quietly } from './errors.js';
import { isBucketName, tempPath } from './layout.js';
import { encodeSidecar, sidecarOf } from './summary.js';

/** The catalog file's name under the root (a dot name: never a bucket). */
export const CATALOG_NAME = '.catalog.jsonl';
/** The lock a rebuild or compaction holds while it replaces the catalog file. */
export const CATALOG_LOCK_NAME = '.catalog.lock';
const CATALOG_FORMAT = 'tidemark-catalog';
/** Bytes read to find the header line. */
const HEADER_PROBE = 512;

/** Path of the catalog file of `root`. */
export function catalogPath(root: string): string {
  return join(root, CATALOG_NAME);
}

/** A fresh token for a new catalog file. */
export function newToken(): string {
  return randomBytes(12).toString('hex');
}

function headerLine(token: string): string {
  return JSON.stringify({ format: CATALOG_FORMAT, version: 1, token });
}

/** The record of an entry (a described session, or one that cannot be described). */
export function entryRecord(entry: CatalogEntry): string {
  if (entry.summary === undefined) return `\n${JSON.stringify({ t: 'p', b: entry.bucket, id: entry.id })}`;
  const sidecar = encodeSidecar({ logSize: entry.logSize, summary: entry.summary }).trimEnd();
  return `\n{"t":"s","b":${JSON.stringify(entry.bucket)},"c":${JSON.stringify(entry.sidecar)},"sc":${sidecar}}`;
}

/** The record of a removed session. */
export function deletedRecord(bucket: string, id: string): string {
  return `\n${JSON.stringify({ t: 'd', b: bucket, id })}`;
}

/** The record of a bucket looked at completely while its directory had mtime `mtimeMs`. */
export function stampRecord(bucket: string, mtimeMs: number): string {
  return `\n${JSON.stringify({ t: 'k', b: bucket, m: mtimeMs })}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Applies one record line to the index; false for a line that is no record (torn, garbage). */
function applyLine(index: CatalogIndex, line: string): boolean {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return false;
  }
  if (!isObject(value) || typeof value.b !== 'string' || !isBucketName(value.b)) return false;
  const bucket = value.b;
  if (value.t === 'k') {
    if (typeof value.m !== 'number') return false;
    index.stamps.set(bucket, value.m);
    return true;
  }
  if (value.t === 's') {
    const sidecar = sidecarOf(value.sc);
    if (sidecar === undefined || typeof value.c !== 'string' || sidecar.summary.id === '') return false;
    const { summary, logSize } = sidecar;
    index.set({ id: summary.id, bucket, logSize, sidecar: value.c, summary });
    return true;
  }
  if (typeof value.id !== 'string') return false;
  if (value.t === 'p') index.set({ id: value.id, bucket, logSize: -1, sidecar: '', summary: undefined });
  else if (value.t === 'd') {
    if (index.get(value.id)?.bucket === bucket) index.remove(value.id);
  } else return false;
  return true;
}

/**
 * Applies the records in `text` (which starts at a record boundary) to the index. Returns the
 * bytes consumed: all of it, except a last record that does not parse yet (another process may
 * be writing it), which is left for the next read.
 */
export function applyRecords(index: CatalogIndex, text: Buffer): { consumed: number; records: number } {
  let records = 0;
  let start = 0;
  for (;;) {
    if (start >= text.length) return { consumed: text.length, records };
    const next = text.indexOf(0x0a, start + 1);
    const end = next === -1 ? text.length : next;
    const line = text.toString('utf8', text[start] === 0x0a ? start + 1 : start, end);
    const ok = line.length > 0 && applyLine(index, line);
    if (ok) records++;
    if (next === -1) return { consumed: ok ? text.length : start, records };
    start = next;
  }
}

/** The header token of the catalog at `path`; undefined when missing or not a catalog. Faults throw. */
export async function readToken(fs: FileSystem, path: string): Promise<string | undefined> {
  let handle: FileHandlePort;
  try {
    handle = await fs.open(path, 'r');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    return (await readHeader(handle)).token;
  } finally {
    await quietly(() => handle.close());
  }
}

async function readHeader(handle: FileHandlePort): Promise<{ token: string | undefined; end: number }> {
  const buffer = Buffer.alloc(HEADER_PROBE);
  const n = await handle.read(buffer, 0, buffer.length, 0);
  const newline = buffer.subarray(0, n).indexOf(0x0a);
  const end = newline === -1 ? n : newline;
  try {
    const value: unknown = JSON.parse(buffer.toString('utf8', 0, end));
    if (
      isObject(value) &&
      value.format === CATALOG_FORMAT &&
      value.version === 1 &&
      typeof value.token === 'string'
    )
      return { token: value.token, end };
  } catch {
    // not a catalog header
  }
  return { token: undefined, end };
}

/** What a read of the catalog file found. */
export type CatalogRead =
  | { kind: 'missing' }
  | { kind: 'invalid' }
  | { kind: 'read'; token: string; start: number; bytes: Buffer; size: number };

/**
 * Reads the catalog from `offset` (the end of what the caller applied of the file named `token`),
 * or whole (from just past the header) when the path holds another file. Faults throw.
 */
export async function readCatalog(
  fs: FileSystem,
  path: string,
  known: { token: string | undefined; offset: number },
): Promise<CatalogRead> {
  let handle: FileHandlePort;
  try {
    handle = await fs.open(path, 'r');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return { kind: 'missing' };
    throw error;
  }
  try {
    const header = await readHeader(handle);
    if (header.token === undefined) return { kind: 'invalid' };
    const size = await handle.size();
    const start = header.token === known.token && known.offset <= size ? known.offset : header.end;
    const bytes = await readRange(handle, start, size);
    return { kind: 'read', token: header.token, start, bytes, size: start + bytes.length };
  } finally {
    await quietly(() => handle.close());
  }
}

/** Bytes `start..end` of an open file (fewer when it is shorter); `end` defaults to its size. */
export async function readRange(handle: FileHandlePort, start: number, end?: number): Promise<Buffer> {
  const stop = end ?? (await handle.size());
  const bytes = Buffer.allocUnsafe(Math.max(0, stop - start));
  let done = 0;
  while (done < bytes.length) {
    const n = await handle.read(bytes, done, bytes.length - done, start + done);
    if (n === 0) break;
    done += n;
  }
  return bytes.subarray(0, done);
}

/** Writes all of `bytes` at `position`; a write that makes no progress is EIO. */
async function writeFully(handle: FileHandlePort, bytes: Buffer, position: number | null): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const n = await handle.write(
      bytes,
      done,
      bytes.length - done,
      position === null ? null : position + done,
    );
    if (n <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    // On an append handle a short write would let another process's record in between.
    if (position === null && n < bytes.length - done)
      throw Object.assign(new Error('short append to the catalog'), { code: 'EIO' });
    done += n;
  }
}

/**
 * Writes a complete new catalog (header and `records`) and renames it over the old one; returns
 * the new file's token and length. `afterRename` runs on the new file's open handle just after
 * the rename (compaction copies the old file's late records there).
 */
export async function replaceCatalog(
  fs: FileSystem,
  root: string,
  records: Iterable<string>,
  afterRename?: (handle: FileHandlePort, size: number) => Promise<number>,
): Promise<{ token: string; size: number }> {
  const token = newToken();
  const temp = tempPath(root);
  const handle = await fs.open(temp, 'wx', 0o600);
  let renamed = false;
  try {
    let size = 0;
    let chunk: string[] = [headerLine(token)];
    let chunkChars = 0;
    const flush = async () => {
      const bytes = Buffer.from(chunk.join(''), 'utf8');
      await writeFully(handle, bytes, size);
      size += bytes.length;
      chunk = [];
      chunkChars = 0;
    };
    for (const record of records) {
      chunk.push(record);
      chunkChars += record.length;
      if (chunkChars > 1 << 20) await flush();
    }
    await flush();
    await handle.datasync();
    await fs.rename(temp, catalogPath(root));
    renamed = true;
    await fs.syncDir(root);
    if (afterRename !== undefined) size = await afterRename(handle, size);
    return { token, size };
  } finally {
    await quietly(() => handle.close());
    if (!renamed) await quietly(() => fs.unlink(temp));
  }
}

/** Writes `bytes` at the end (`size`) of a catalog being compacted and syncs them. */
export async function appendAt(handle: FileHandlePort, bytes: Buffer, size: number): Promise<number> {
  if (bytes.length === 0) return size;
  await writeFully(handle, bytes, size);
  await handle.datasync();
  return size + bytes.length;
}

interface Waiter {
  bytes: Buffer;
  durable: boolean;
  resolve: (token: string | undefined) => void;
  reject: (error: unknown) => void;
}

/**
 * Appends records to the catalog file, many at once: records queued while a write (and sync) is
 * under way go out together in the next one, so concurrent sessions share one write and one
 * fdatasync (group commit) instead of queueing one behind another. Resolves the token of the
 * file written, or undefined when there is no catalog file to write to (a rebuild will make one).
 */
export class CatalogAppender {
  private handle: FileHandlePort | undefined;
  private token: string | undefined;
  private queue: Waiter[] = [];
  private running = false;
  private stale = false;

  constructor(
    private readonly fs: FileSystem,
    private readonly path: string,
  ) {}

  append(text: string, durable: boolean): Promise<string | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ bytes: Buffer.from(text, 'utf8'), durable, resolve, reject });
      if (!this.running) void this.pump();
    });
  }

  /**
   * Forgets the open file: the next append opens whatever the path holds then. A write under way
   * finishes on the old descriptor first (closing it under the write would fail that write).
   */
  async reset(): Promise<void> {
    this.stale = true;
    if (!this.running) await this.drop();
  }

  private async drop(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    this.token = undefined;
    this.stale = false;
    if (handle !== undefined) await quietly(() => handle.close());
  }

  private async pump(): Promise<void> {
    this.running = true;
    for (;;) {
      if (this.stale) await this.drop();
      // Checked after the last await: an append queued meanwhile saw `running` and left it to us.
      if (this.queue.length === 0) break;
      const batch = this.queue.splice(0);
      try {
        const handle = await this.open();
        if (handle !== undefined) {
          await writeFully(handle, Buffer.concat(batch.map((w) => w.bytes)), null);
          if (batch.some((w) => w.durable)) await handle.datasync();
        }
        for (const waiter of batch) waiter.resolve(handle === undefined ? undefined : this.token);
      } catch (error) {
        await this.drop();
        for (const waiter of batch) waiter.reject(error);
      }
    }
    this.running = false;
  }

  /** Opens the catalog for appending, only when the path holds one (the same before and after the open). */
  private async open(): Promise<FileHandlePort | undefined> {
    if (this.handle !== undefined) return this.handle;
    const before = await readToken(this.fs, this.path);
    if (before === undefined) return undefined;
    const handle = await this.fs.open(this.path, 'a', 0o600);
    const after = await readToken(this.fs, this.path).catch(async (error: unknown) => {
      await quietly(() => handle.close());
      throw error;
    });
    if (after !== before) {
      await quietly(() => handle.close());
      return undefined;
    }
    this.handle = handle;
    this.token = before;
    return handle;
  }
}

/** Every record that describes `index` completely (for a rebuild or compaction). */
export function* recordsOf(index: CatalogIndex): Iterable<string> {
  for (const entry of index.all()) yield entryRecord(entry);
  for (const [bucket, mtime] of index.stamps) yield stampRecord(bucket, mtime);
}

/** The catalog state of a new store instance: nothing read yet. */
export function newCatalogState(fs: FileSystem, root: string): CatalogState {
  const path = catalogPath(root);
  return {
    path,
    sink: new CatalogAppender(fs, path),
    index: undefined,
    token: undefined,
    offset: 0,
    records: 0,
  };
}
