import type { FileHandlePort, FileSystem, OpenFlags, StatPort } from '@tidemark/core';
import { Volume } from 'memfs';

type MemfsHandle = Awaited<ReturnType<Volume['promises']['open']>>;

class MemfsFileHandle implements FileHandlePort {
  constructor(private readonly handle: MemfsHandle) {}
  async read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    const { bytesRead } = await this.handle.read(buffer, offset, length, position);
    return bytesRead;
  }
  async write(buffer: Uint8Array, offset: number, length: number, position: number | null): Promise<number> {
    const { bytesWritten } = await this.handle.write(buffer, offset, length, position ?? undefined);
    return bytesWritten;
  }
  async datasync(): Promise<void> {
    await this.handle.datasync();
  }
  async sync(): Promise<void> {
    // memfs's handle types lack sync(); its datasync is the same no-op.
    await this.handle.datasync();
  }
  async truncate(length: number): Promise<void> {
    await this.handle.truncate(length);
  }
  async size(): Promise<number> {
    return Number((await this.handle.stat()).size);
  }
  async close(): Promise<void> {
    await this.handle.close();
  }
}

/**
 * The process memfs sees: this one's, with its uid and gid read once. memfs asks `getuid()` and
 * `getgid()` on every path it walks, and the calls were a tenth of the CPU of the quick harness
 * over JSONL (10 of 101 CPU-seconds, profiled); a sweep never changes its ids.
 */
const UID = process.getuid?.() ?? 0;
const GID = process.getgid?.() ?? 0;
const memfsProcess = {
  getuid: () => UID,
  getgid: () => GID,
  cwd: () => process.cwd(),
  platform: process.platform,
  emitWarning: (message: string, type: string) => process.emitWarning(message, type),
  env: process.env,
};

/** A new, empty memfs volume; every volume of the harness comes from here. */
export function newVolume(): Volume {
  return Volume.fromJSON({}, undefined, { process: memfsProcess });
}

/** Runs `call` with errors made without a stack (a synchronous call only: the limit is global). */
function withoutStacks<T>(call: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return call();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * A {@link FileSystem} over a memfs `Volume`: fast, isolated storage for sweeps. memfs has a no-op
 * fsync, knows no O_DSYNC (`'r+dsync'` opens as `'r+'`) and does not follow O_NOFOLLOW, so
 * durability and link safety are modelled elsewhere (CrashFs), not here.
 */
export function memfsFileSystem(volume: Volume = newVolume()): FileSystem & { volume: Volume } {
  const p = volume.promises;
  return {
    volume,
    async open(path: string, flags: OpenFlags, mode = 0o600): Promise<FileHandlePort> {
      // memfs knows no O_DSYNC and its sync is a no-op anyway: a dsync handle is a plain one here.
      return new MemfsFileHandle(await p.open(path, flags === 'r+dsync' ? 'r+' : flags, mode));
    },
    async readFile(path: string): Promise<Uint8Array> {
      const data = await p.readFile(path);
      return typeof data === 'string' ? Buffer.from(data) : new Uint8Array(data);
    },
    async link(existingPath: string, newPath: string): Promise<void> {
      await p.link(existingPath, newPath);
    },
    async rename(oldPath: string, newPath: string): Promise<void> {
      await p.rename(oldPath, newPath);
    },
    async unlink(path: string): Promise<void> {
      await p.unlink(path);
    },
    async mkdir(path: string, options: { recursive?: boolean; mode?: number } = {}): Promise<void> {
      await p.mkdir(path, { recursive: options.recursive ?? false, mode: options.mode ?? 0o700 });
    },
    async rmdir(path: string): Promise<void> {
      await p.rmdir(path);
    },
    async readdir(path: string): Promise<string[]> {
      return ((await p.readdir(path)) as unknown[]).map(String);
    },
    async lstat(path: string): Promise<StatPort> {
      // What memfs's own async lstat does (the call on a later turn of the event loop), but with
      // the error made without a stack: backends lstat paths that may be absent all the time, and
      // capturing the stack of those ENOENTs was 4 of the quick JSONL harness's 101 CPU-seconds.
      await new Promise((resolve) => setImmediate(resolve));
      const s = withoutStacks(() => volume.lstatSync(path));
      return {
        size: Number(s.size),
        mtimeMs: Number(s.mtimeMs),
        mode: Number(s.mode),
        isFile: () => s.isFile(),
        isDirectory: () => s.isDirectory(),
        isSymbolicLink: () => s.isSymbolicLink(),
      };
    },
    async syncDir(path: string): Promise<void> {
      // memfs keeps nothing to flush, but a real syncDir fails on a missing path or a file.
      const s = await p.stat(path);
      if (!s.isDirectory()) {
        const error = new Error(`ENOTDIR: not a directory, open '${path}'`) as Error & {
          code: string;
          path: string;
          syscall: string;
        };
        error.code = 'ENOTDIR';
        error.path = path;
        error.syscall = 'open';
        throw error;
      }
    },
  };
}
