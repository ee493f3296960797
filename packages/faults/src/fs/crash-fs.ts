import { posix } from 'node:path';
import type { FileHandlePort, FileSystem, OpenFlags, StatPort } from '@tidemark/core';
import type { Volume } from 'memfs';
import {
  applyDataOps,
  applyDirOp,
  type CrashPoint,
  cloneNs,
  type DirOp,
  type Inode,
  type Namespace,
  parentOf,
} from './crash-states.js';
import { memfsFileSystem, newVolume } from './memfs-fs.js';

export {
  applyDataOps,
  applyDirOp,
  type ContentVariant,
  CRASH_AGE_MS,
  type CrashPoint,
  type CrashState,
  type CrashStateLimits,
  contentVariants,
  crashStatesAt,
  cutOffsets,
  type DataOp,
  DENSE_TAIL_BYTES,
  type DirOp,
  denseOffsets,
  dirOpSubsets,
  enumerateCrashStates,
  freshWrites,
  materialize,
} from './crash-states.js';

const WRITE_FLAGS: ReadonlySet<OpenFlags> = new Set(['r+', 'r+dsync', 'a', 'wx', 'wx+']);

/** Flags whose handles write through to stable storage (O_DSYNC): every write is a write + datasync. */
const DSYNC_FLAGS: ReadonlySet<OpenFlags> = new Set(['r+dsync']);

/**
 * A power-loss model over memfs (after LazyFS, ALICE and SQLite's crash VFS). Live calls go to a
 * memfs volume, so errors are real; beside it, each file keeps a durable image plus the data
 * operations since its last `sync`/`datasync`, and each directory operation (create, link, rename,
 * unlink, mkdir, rmdir) stays volatile until its parent directory is synced with `syncDir`. A
 * write on a `'r+dsync'` (O_DSYNC) handle is a write followed by a datasync: it is traced as
 * `write` (a crash there may tear it, as during the syscall) then `datasync` (from there on its
 * data, not a directory entry, is durable), both before the call returns.
 * {@link CrashFs.crashPoint} freezes the current state; {@link enumerateCrashStates} lists what a
 * disk may hold after a crash there, and {@link materialize} turns a state into a fresh FileSystem.
 */
export class CrashFs implements FileSystem {
  private readonly live: FileSystem & { volume: Volume };
  private current: Namespace = { files: new Map(), dirs: new Set(['/']) };
  private durable: Namespace = { files: new Map(), dirs: new Set(['/']) };
  private pendingDirOps: { op: DirOp; dirs: string[] }[] = [];
  private readonly inodes = new Map<number, Inode>();
  private nextIno = 1;
  private opCount = 0;

  /** @param onOperation - called after every completed or failed call, with its index and name. */
  constructor(private readonly onOperation?: (index: number, op: string) => void) {
    this.live = memfsFileSystem(newVolume());
  }

  /** Makes everything durable, as after a clean shutdown (setup before a sweep). */
  checkpoint(): void {
    for (const inode of this.inodes.values()) this.flushInode(inode);
    this.durable = cloneNs(this.current);
    this.pendingDirOps = [];
  }

  /** Freezes the disk as it is now. */
  crashPoint(op = 'now'): CrashPoint {
    const inodes = new Map<number, Inode>();
    const live = new Set<number>([...this.durable.files.values(), ...this.current.files.values()]);
    for (const entry of this.pendingDirOps) if ('ino' in entry.op) live.add(entry.op.ino);
    for (const ino of live) {
      const inode = this.inodes.get(ino);
      if (inode !== undefined) inodes.set(ino, { durable: inode.durable, pending: [...inode.pending] });
    }
    return {
      afterOp: this.opCount - 1,
      op,
      durable: cloneNs(this.durable),
      pendingDirOps: this.pendingDirOps.map((entry) => ({ op: entry.op, dirs: [...entry.dirs] })),
      inodes,
    };
  }

  private flushInode(inode: Inode): void {
    inode.durable = applyDataOps(inode.durable, inode.pending);
    inode.pending = [];
  }

  private async track<T>(op: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } finally {
      const index = this.opCount++;
      this.onOperation?.(index, op);
    }
  }

  private recordDirOp(op: DirOp, dirs: string[]): void {
    applyDirOp(this.current, op);
    this.pendingDirOps.push({ op, dirs });
  }

  private newInode(): number {
    const ino = this.nextIno++;
    this.inodes.set(ino, { durable: new Uint8Array(), pending: [] });
    return ino;
  }

  async open(path: string, flags: OpenFlags, mode?: number): Promise<FileHandlePort> {
    const normalized = posix.normalize(path);
    return this.track('open', async () => {
      const existed = this.current.files.get(normalized);
      const handle = await this.live.open(normalized, flags, mode);
      let ino = existed;
      if (ino === undefined) {
        if (!WRITE_FLAGS.has(flags) || flags === 'r+' || flags === 'r+dsync') return handle; // read of a file outside the model
        ino = this.newInode();
        this.recordDirOp({ kind: 'create', path: normalized, ino }, [parentOf(normalized)]);
      }
      return this.wrapHandle(handle, this.inodes.get(ino)!, flags);
    });
  }

  private wrapHandle(handle: FileHandlePort, inode: Inode, flags: OpenFlags): FileHandlePort {
    const contentLength = () => applyDataOps(inode.durable, inode.pending).length;
    const dsync = DSYNC_FLAGS.has(flags);
    return {
      read: (buffer, offset, length, position) =>
        this.track('read', () => handle.read(buffer, offset, length, position)),
      write: (buffer, offset, length, position) =>
        this.track('write', async () => {
          const at = flags === 'a' || position === null ? contentLength() : position;
          const written = await handle.write(buffer, offset, length, flags === 'a' ? null : at);
          inode.pending.push({
            kind: 'write',
            position: at,
            data: Uint8Array.from(buffer.subarray(offset, offset + written)),
          });
          return written;
        }).then(async (written) => {
          // O_DSYNC: the call returns only once the data is durable, as after fdatasync.
          if (dsync) await this.track('datasync', async () => this.flushInode(inode));
          return written;
        }),
      datasync: () =>
        this.track('datasync', async () => {
          await handle.datasync();
          this.flushInode(inode);
        }),
      sync: () =>
        this.track('sync', async () => {
          await handle.sync();
          this.flushInode(inode);
        }),
      truncate: (length) =>
        this.track('truncate', async () => {
          await handle.truncate(length);
          inode.pending.push({ kind: 'truncate', length });
        }),
      size: () => this.track('size', () => handle.size()),
      close: () => this.track('close', () => handle.close()),
    };
  }

  readFile(path: string): Promise<Uint8Array> {
    return this.track('readFile', () => this.live.readFile(path));
  }

  link(existingPath: string, newPath: string): Promise<void> {
    return this.track('link', async () => {
      await this.live.link(existingPath, newPath);
      const ino = this.current.files.get(posix.normalize(existingPath));
      if (ino !== undefined)
        this.recordDirOp({ kind: 'link', path: posix.normalize(newPath), ino }, [
          parentOf(posix.normalize(newPath)),
        ]);
    });
  }

  rename(oldPath: string, newPath: string): Promise<void> {
    return this.track('rename', async () => {
      await this.live.rename(oldPath, newPath);
      const from = posix.normalize(oldPath);
      const to = posix.normalize(newPath);
      this.recordDirOp({ kind: 'rename', from, to }, [parentOf(to), parentOf(from)]);
    });
  }

  unlink(path: string): Promise<void> {
    return this.track('unlink', async () => {
      await this.live.unlink(path);
      const normalized = posix.normalize(path);
      this.recordDirOp({ kind: 'unlink', path: normalized }, [parentOf(normalized)]);
    });
  }

  mkdir(path: string, options?: { recursive?: boolean; mode?: number }): Promise<void> {
    return this.track('mkdir', async () => {
      const normalized = posix.normalize(path);
      const missing: string[] = [];
      for (let dir = normalized; dir !== '/' && !this.current.dirs.has(dir); dir = parentOf(dir))
        missing.unshift(dir);
      await this.live.mkdir(normalized, options);
      for (const dir of options?.recursive ? missing : missing.slice(-1))
        this.recordDirOp({ kind: 'mkdir', path: dir }, [parentOf(dir)]);
    });
  }

  rmdir(path: string): Promise<void> {
    return this.track('rmdir', async () => {
      await this.live.rmdir(path);
      const normalized = posix.normalize(path);
      this.recordDirOp({ kind: 'rmdir', path: normalized }, [parentOf(normalized)]);
    });
  }

  readdir(path: string): Promise<string[]> {
    return this.track('readdir', () => this.live.readdir(path));
  }

  lstat(path: string): Promise<StatPort> {
    return this.track('lstat', () => this.live.lstat(path));
  }

  syncDir(path: string): Promise<void> {
    return this.track('syncDir', async () => {
      await this.live.syncDir(path);
      const dir = posix.normalize(path);
      // fsync of a directory persists the entries it holds: apply its pending operations, in order.
      const rest: { op: DirOp; dirs: string[] }[] = [];
      for (const entry of this.pendingDirOps) {
        if (entry.dirs.includes(dir)) applyDirOp(this.durable, entry.op);
        else rest.push(entry);
      }
      this.pendingDirOps = rest;
    });
  }
}
