// A FileSystem wrapper for tests: fails chosen calls with an errno, and records what happened.
import { type FileHandlePort, type FileSystem, nodeFileSystem, type OpenFlags } from '@tidemark/core';

/** A call the wrapper can fail. */
export type FsCall =
  | 'open'
  | 'readFile'
  | 'link'
  | 'rename'
  | 'unlink'
  | 'mkdir'
  | 'readdir'
  | 'lstat'
  | 'syncDir'
  | 'read'
  | 'write'
  | 'datasync'
  | 'sync'
  | 'truncate'
  | 'size';

/** Decides whether a call fails: return an errno name to fail it. */
export type FaultRule = (call: FsCall, path: string) => string | undefined;

function fault(code: string, call: string, path: string): Error {
  return Object.assign(new Error(`${code}: injected on ${call} ${path}`), { code });
}

/** The wrapper plus its log of calls (`call path`), and handles whose datasync failed. */
export interface FaultyFs {
  fs: FileSystem;
  calls: string[];
  rule: FaultRule;
  /**
   * Writes or datasyncs on a handle after a write or datasync on it failed (a failed write on an
   * O_DSYNC handle is a failed fdatasync): must stay 0, the store never retries on that descriptor.
   */
  syncAfterFailure: number;
  /** Every open, as `flags path`. */
  opens: string[];
  /** Handles opened and not yet closed. */
  openHandles: number;
  /** When set, a write writes only this many bytes before failing. */
  shortWrite?: number;
}

/** Wraps the real file system. */
export function faultyFs(rule: FaultRule = () => undefined): FaultyFs {
  const state: FaultyFs = {
    fs: nodeFileSystem,
    calls: [],
    rule,
    syncAfterFailure: 0,
    opens: [],
    openHandles: 0,
  };
  const check = (call: FsCall, path: string) => {
    state.calls.push(`${call} ${path}`);
    const code = state.rule(call, path);
    if (code !== undefined) throw fault(code, call, path);
  };
  const wrapHandle = (inner: FileHandlePort, path: string): FileHandlePort => {
    let syncFailed = false;
    let closed = false;
    state.openHandles++;
    return {
      async read(buffer, offset, length, position) {
        check('read', path);
        return inner.read(buffer, offset, length, position);
      },
      async write(buffer, offset, length, position) {
        if (syncFailed) state.syncAfterFailure++;
        if (state.shortWrite !== undefined) {
          const n = Math.min(state.shortWrite, length);
          state.shortWrite = undefined;
          syncFailed = true;
          await inner.write(buffer, offset, n, position);
          throw fault('ENOSPC', 'write', path);
        }
        try {
          check('write', path);
        } catch (error) {
          syncFailed = true;
          throw error;
        }
        return inner.write(buffer, offset, length, position);
      },
      async datasync() {
        if (syncFailed) state.syncAfterFailure++;
        try {
          check('datasync', path);
        } catch (error) {
          syncFailed = true;
          throw error;
        }
        return inner.datasync();
      },
      async sync() {
        check('sync', path);
        return inner.sync();
      },
      async truncate(length) {
        check('truncate', path);
        return inner.truncate(length);
      },
      async size() {
        check('size', path);
        return inner.size();
      },
      close: async () => {
        if (closed) return inner.close();
        closed = true;
        state.openHandles--;
        return inner.close();
      },
    };
  };
  state.fs = {
    async open(path: string, flags: OpenFlags, mode?: number) {
      check('open', path);
      state.opens.push(`${flags} ${path}`);
      return wrapHandle(await nodeFileSystem.open(path, flags, mode), path);
    },
    async readFile(path) {
      check('readFile', path);
      return nodeFileSystem.readFile(path);
    },
    async link(a, b) {
      check('link', b);
      return nodeFileSystem.link(a, b);
    },
    async rename(a, b) {
      check('rename', b);
      return nodeFileSystem.rename(a, b);
    },
    async unlink(path) {
      check('unlink', path);
      return nodeFileSystem.unlink(path);
    },
    async mkdir(path, options) {
      check('mkdir', path);
      return nodeFileSystem.mkdir(path, options);
    },
    rmdir: (path) => nodeFileSystem.rmdir(path),
    async readdir(path) {
      check('readdir', path);
      return nodeFileSystem.readdir(path);
    },
    async lstat(path) {
      check('lstat', path);
      return nodeFileSystem.lstat(path);
    },
    async syncDir(path) {
      check('syncDir', path);
      return nodeFileSystem.syncDir(path);
    },
  };
  return state;
}
