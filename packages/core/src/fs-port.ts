// The FileSystem port: the only way file backends touch files. The fault harness wraps it to
// inject errors (FaultyFs) or to simulate power loss (CrashFs); production uses nodeFileSystem.
import { constants, promises as fsp } from 'node:fs';

/** Open modes used by the file backends. Writes never follow a symlink at the final component. */
export type OpenFlags =
  /** read only */
  | 'r'
  /** read and write, must exist */
  | 'r+'
  /**
   * Like `'r+'` (read and write, must exist), and every write returns only once its data is on
   * stable storage, like write + fdatasync (O_DSYNC). A failed write on such a handle may have
   * left any part of its data behind, durable or not, as a failed fdatasync may.
   */
  | 'r+dsync'
  /** append (create if missing) */
  | 'a'
  /** create exclusively for writing; fails with EEXIST if the path exists (even as a link) */
  | 'wx'
  /** create exclusively, read and write */
  | 'wx+';

/** An open file. Positions are explicit: the port has no implicit file offset except for 'a'. */
export interface FileHandlePort {
  /** Reads up to `length` bytes at `position` into `buffer[offset..]`; resolves bytes read (0 at EOF). */
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number>;
  /**
   * Writes `buffer[offset..offset+length]` at `position` (or at the end, for 'a' handles and when
   * `position` is null). Resolves the bytes written, which may be fewer than `length`.
   */
  write(buffer: Uint8Array, offset: number, length: number, position: number | null): Promise<number>;
  /** fdatasync(2). */
  datasync(): Promise<void>;
  /** fsync(2). */
  sync(): Promise<void>;
  /** ftruncate(2). */
  truncate(length: number): Promise<void>;
  /** Size of the open file. */
  size(): Promise<number>;
  close(): Promise<void>;
}

/** What `lstat` reports. */
export interface StatPort {
  size: number;
  mtimeMs: number;
  mode: number;
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

/** The small async file system surface the file backends need. */
export interface FileSystem {
  open(path: string, flags: OpenFlags, mode?: number): Promise<FileHandlePort>;
  /** Whole-file read (summaries, small files). */
  readFile(path: string): Promise<Uint8Array>;
  /** Hard link; fails with EEXIST when `newPath` exists. */
  link(existingPath: string, newPath: string): Promise<void>;
  rename(oldPath: string, newPath: string): Promise<void>;
  unlink(path: string): Promise<void>;
  mkdir(path: string, options?: { recursive?: boolean; mode?: number }): Promise<void>;
  rmdir(path: string): Promise<void>;
  readdir(path: string): Promise<string[]>;
  lstat(path: string): Promise<StatPort>;
  /** Opens a directory and fsyncs it, so that entries created, renamed or removed in it persist. */
  syncDir(path: string): Promise<void>;
}

// Reads also refuse a link at the last component and never block in open(): a FIFO or a link to a
// device planted inside the store must give an error, not a hang or an endless read.
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

const WRITE_FLAGS: Record<OpenFlags, number> = {
  r: READ_FLAGS,
  'r+': constants.O_RDWR | constants.O_NOFOLLOW,
  'r+dsync': constants.O_RDWR | constants.O_NOFOLLOW | constants.O_DSYNC,
  a: constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW,
  wx: constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
  'wx+': constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
};

class NodeFileHandle implements FileHandlePort {
  constructor(private readonly handle: fsp.FileHandle) {}
  async read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    const { bytesRead } = await this.handle.read(buffer, offset, length, position);
    return bytesRead;
  }
  async write(buffer: Uint8Array, offset: number, length: number, position: number | null): Promise<number> {
    const { bytesWritten } = await this.handle.write(buffer, offset, length, position);
    return bytesWritten;
  }
  datasync(): Promise<void> {
    return this.handle.datasync();
  }
  sync(): Promise<void> {
    return this.handle.sync();
  }
  truncate(length: number): Promise<void> {
    return this.handle.truncate(length);
  }
  async size(): Promise<number> {
    return (await this.handle.stat()).size;
  }
  close(): Promise<void> {
    return this.handle.close();
  }
}

/** Opens `path` for reading, refusing links and anything but a regular file (EINVAL). */
async function openRegularForRead(path: string): Promise<fsp.FileHandle> {
  const handle = await fsp.open(path, READ_FLAGS);
  try {
    if ((await handle.stat()).isFile()) return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
  await handle.close();
  throw Object.assign(new Error(`EINVAL: not a regular file, open '${path}'`), {
    code: 'EINVAL',
    syscall: 'open',
    path,
  });
}

/**
 * The real file system through `node:fs/promises`. Every open refuses a symlink at the last path
 * component (O_NOFOLLOW); reads open only regular files and never block; `'r+dsync'` adds O_DSYNC.
 */
export const nodeFileSystem: FileSystem = {
  async open(path, flags, mode = 0o600) {
    if (flags === 'r') return new NodeFileHandle(await openRegularForRead(path));
    return new NodeFileHandle(await fsp.open(path, WRITE_FLAGS[flags], mode));
  },
  async readFile(path) {
    const handle = await openRegularForRead(path);
    try {
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  },
  link: (existingPath, newPath) => fsp.link(existingPath, newPath),
  rename: (oldPath, newPath) => fsp.rename(oldPath, newPath),
  unlink: (path) => fsp.unlink(path),
  async mkdir(path, options = {}) {
    await fsp.mkdir(path, { recursive: options.recursive ?? false, mode: options.mode ?? 0o700 });
  },
  rmdir: (path) => fsp.rmdir(path),
  readdir: (path) => fsp.readdir(path),
  lstat: (path) => fsp.lstat(path),
  async syncDir(path) {
    const handle = await fsp.open(path, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
};
