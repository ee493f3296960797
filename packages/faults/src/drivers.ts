import { spawn } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import type { FileSystem, SessionStore, StoreOptions } from '@tidemark/core';
import type { EngineHarnessDriver, FsHarnessDriver, RealFaultCase } from './driver.js';
import { childScriptPath } from './real.js';

// The project's own backends are loaded by name at call time: this package depends on them only
// for its own tests and runnable entry, and a third party using the harness needs neither.
async function load<T>(specifier: string): Promise<T> {
  return (await import(specifier)) as T;
}

type JsonlModule = {
  openJsonlStore(options: { root: string; fs?: FileSystem } & StoreOptions): Promise<SessionStore>;
};
type SqliteModule = {
  openSqliteStore(
    options: { path: string; busyTimeoutMs?: number; maxPageCount?: number } & StoreOptions,
  ): Promise<SessionStore>;
};

/** `@tidemark/jsonl` as an fs-kind driver (FaultyFs and CrashFs sweeps, real faults). */
export function jsonlDriver(options: StoreOptions = {}): FsHarnessDriver {
  return {
    name: 'jsonl',
    kind: 'fs',
    async open({ fs, root }) {
      const { openJsonlStore } = await load<JsonlModule>('@tidemark/jsonl');
      return openJsonlStore({ ...options, root, fs });
    },
    real: {
      location: 'dir',
      module: '@tidemark/jsonl',
      factory: 'openJsonlStore',
      options: (root) => ({ root }),
    },
  };
}

async function corruptFile(path: string, at: (size: number) => number, length: number): Promise<void> {
  const handle = await fsp.open(path, 'r+');
  try {
    const size = (await handle.stat()).size;
    const garbage = Buffer.alloc(length);
    for (let i = 0; i < length; i++) garbage[i] = (i * 131 + 7) & 0xff;
    await handle.write(garbage, 0, length, Math.min(at(size), Math.max(0, size - length)));
  } finally {
    await handle.close();
  }
}

/** SQLite-specific real faults: corruption, truncation, a lock held by another process, a full database. */
export function sqliteRealFaults(): RealFaultCase[] {
  return [
    {
      name: 'sqlite: corrupted pages',
      async inflict(path) {
        await corruptFile(path, (size) => Math.floor(size / 2 / 4096) * 4096, 4096);
        return { destructive: true };
      },
    },
    {
      name: 'sqlite: corrupted header',
      async inflict(path) {
        await corruptFile(path, () => 0, 100);
        return { destructive: true };
      },
    },
    {
      name: 'sqlite: truncated file',
      async inflict(path) {
        const { size } = await fsp.stat(path);
        await fsp.truncate(path, Math.max(4096, Math.floor(size / 2)));
        return { destructive: true };
      },
    },
    {
      name: 'sqlite: locked by another process',
      async inflict(path) {
        const child = spawn(
          process.execPath,
          [childScriptPath(), JSON.stringify({ mode: 'sqlite-lock', path })],
          { stdio: ['pipe', 'pipe', 'inherit'] },
        );
        await new Promise<void>((resolve, reject) => {
          child.stdout.on('data', (chunk: Buffer) => {
            if (chunk.toString().includes('locked')) resolve();
          });
          child.on('exit', (code) => reject(new Error(`lock holder exited with ${code}`)));
        });
        return {
          destructive: false,
          storeOptions: { busyTimeoutMs: 50 },
          async release() {
            const closed = new Promise((resolve) => child.on('close', resolve));
            child.stdin.end();
            await closed;
          },
        };
      },
    },
    {
      name: 'sqlite: full database (max_page_count)',
      async inflict(path) {
        const { size } = await fsp.stat(path);
        // Room for a page or two: the probe's append of bigger events must hit SQLITE_FULL.
        return { destructive: false, storeOptions: { maxPageCount: Math.ceil(size / 4096) + 1 } };
      },
    },
  ];
}

/**
 * `@tidemark/sqlite` as an engine driver. better-sqlite3 has no custom VFS, so there is no step
 * injector: its rows are real faults (SIGKILL, corruption, truncation, locks, a full database).
 */
export function sqliteDriver(options: StoreOptions = {}): EngineHarnessDriver {
  return {
    name: 'sqlite',
    kind: 'engine',
    injectsSteps: false,
    async create() {
      const dir = await fsp.mkdtemp('/tmp/tidemark-sqlite-');
      const { openSqliteStore } = await load<SqliteModule>('@tidemark/sqlite');
      return {
        open: () => openSqliteStore({ ...options, path: `${dir}/store.db` }),
        destroy: () => fsp.rm(dir, { recursive: true, force: true }),
      };
    },
    real: {
      location: 'file',
      module: '@tidemark/sqlite',
      factory: 'openSqliteStore',
      options: (path) => ({ path }),
    },
    realFaults: sqliteRealFaults(),
  };
}
