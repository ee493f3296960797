// The descriptor a read from the end of a log (read-last.ts) uses. On the real file system its few
// small steps (open, fstat, two reads of 16 KiB, close) are made with the synchronous calls: each
// asynchronous one is a round trip through libuv's thread pool, tens of microseconds each on a
// busy machine, where the call itself costs one or two; a cold read of a session's newest events
// is mostly those round trips otherwise. Bounded: past SYNC_READ_BYTES read by one descriptor, its
// reads go through the thread pool again, so a long walk back does not hold the event loop. Any
// other file system (the fault harness's wrappers) is used through its port, as everywhere else.
// The same flags and checks as the port's read opens: no link at the last component, no blocking
// open, a regular file only (EINVAL otherwise); ENOENT stays ENOENT (absence), as there.
import { closeSync, constants, fstatSync, openSync, read as readAsync, readdirSync, readSync } from 'node:fs';
import { type FileHandlePort, type FileSystem, nodeFileSystem } from '@tidemark/core';

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Bytes one descriptor reads synchronously; further reads go through the thread pool. */
const SYNC_READ_BYTES = 256 * 1024;

class SyncReadHandle implements FileHandlePort {
  private readBytes = 0;
  private closed = false;
  /** A read through the thread pool in flight: close waits for it (the descriptor may be reused). */
  private pending: Promise<number> | undefined;

  /**
   * @param opened the size fstat gave at the open: the first `size()` answers it (the same open
   * file, a moment before; any later size is as good a snapshot of a log that only grows under a
   * reader, and a rewrite by path does not touch the file this descriptor holds).
   */
  constructor(
    private readonly fd: number,
    private opened: number | undefined,
  ) {}

  async read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    if (this.closed) throw Object.assign(new Error('EBADF: file closed, read'), { code: 'EBADF' });
    if (this.readBytes + length > SYNC_READ_BYTES) {
      const pending = new Promise<number>((resolve, reject) =>
        readAsync(this.fd, buffer, offset, length, position, (error, n) =>
          error === null ? resolve(n) : reject(error),
        ),
      );
      this.pending = pending;
      try {
        return await pending;
      } finally {
        if (this.pending === pending) this.pending = undefined;
      }
    }
    this.readBytes += length;
    return readSync(this.fd, buffer, offset, length, position);
  }

  async size(): Promise<number> {
    if (this.closed) throw Object.assign(new Error('EBADF: file closed, fstat'), { code: 'EBADF' });
    const opened = this.opened;
    this.opened = undefined;
    return opened ?? fstatSync(this.fd).size;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pending?.catch(() => undefined);
    closeSync(this.fd);
  }

  write(): Promise<number> {
    return Promise.reject(new Error('read-only descriptor'));
  }

  datasync(): Promise<void> {
    return Promise.reject(new Error('read-only descriptor'));
  }

  sync(): Promise<void> {
    return Promise.reject(new Error('read-only descriptor'));
  }

  truncate(): Promise<void> {
    return Promise.reject(new Error('read-only descriptor'));
  }
}

/** Opens `path` for reading as `fs.open(path, 'r')` does, synchronously on the real file system. */
export async function openForRead(fs: FileSystem, path: string): Promise<FileHandlePort> {
  if (fs !== nodeFileSystem) return fs.open(path, 'r');
  const fd = openSync(path, READ_FLAGS);
  try {
    const stat = fstatSync(fd);
    if (stat.isFile()) return new SyncReadHandle(fd, stat.size);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  closeSync(fd);
  throw Object.assign(new Error(`EINVAL: not a regular file, open '${path}'`), {
    code: 'EINVAL',
    syscall: 'open',
    path,
  });
}

/** `fs.readdir(path)`, synchronously on the real file system (a store root holds few buckets). */
export async function readdirForRead(fs: FileSystem, path: string): Promise<string[]> {
  return fs === nodeFileSystem ? readdirSync(path) : fs.readdir(path);
}
