// `@tidemark/sqlite/harness`: the SQLite backend as a driver of the storage-fault harness, with
// the checks only SQLite needs (its real faults, its settings read back, power loss replayed from a
// system-call trace). `tidemark harness --backends sqlite` loads it through the same loader as a
// third party's `--driver`.
import { spawn } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoreOptions } from '@tidemark/core';
import type { EngineHarnessDriver, RealFaultCase } from '@tidemark/faults';
import { builtFile, GROUP_COMMIT_WORKLOAD } from '@tidemark/faults';
import { openSqliteStore } from '../index.js';
import { sqlitePowerLoss } from './powerloss.js';
import { sqliteRacePowerLoss } from './race-powerloss.js';
import { SQLITE_OPEN_SPEC, sqliteSettingsCheck } from './settings.js';

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
        const child = spawn(process.execPath, [builtFile(import.meta.url, 'harness/lock-child.js'), path], {
          stdio: ['pipe', 'pipe', 'inherit'],
        });
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
 * The SQLite result code a harness errno class stands for, as better-sqlite3 would report it:
 *
 * | errno                      | SQLite code                                         |
 * | -------------------------- | --------------------------------------------------- |
 * | EIO                        | `SQLITE_IOERR`                                      |
 * | ENOSPC, EDQUOT             | `SQLITE_FULL`                                       |
 * | EROFS                      | `SQLITE_READONLY`                                   |
 * | EACCES                     | `SQLITE_READONLY` (`SQLITE_CANTOPEN` while opening) |
 * | EPERM                      | `SQLITE_PERM` (`SQLITE_CANTOPEN` while opening)     |
 * | EMFILE, ENFILE, ENOTDIR, EISDIR | `SQLITE_CANTOPEN`                              |
 * | EBUSY, EAGAIN, EWOULDBLOCK | `SQLITE_BUSY`                                       |
 * | ENOMEM                     | `SQLITE_NOMEM`                                      |
 * | anything else              | `SQLITE_IOERR`                                      |
 *
 * (SQLite opens its files lazily and reports any failure to open one as CANTOPEN; a write refused
 * by the file system after opening is READONLY or PERM.)
 */
export function sqliteCodeForErrno(errno: string, step?: string): string {
  const opening = step === 'open';
  switch (errno) {
    case 'EIO':
      return 'SQLITE_IOERR';
    case 'ENOSPC':
    case 'EDQUOT':
      return 'SQLITE_FULL';
    case 'EROFS':
      return 'SQLITE_READONLY';
    case 'EACCES':
      return opening ? 'SQLITE_CANTOPEN' : 'SQLITE_READONLY';
    case 'EPERM':
      return opening ? 'SQLITE_CANTOPEN' : 'SQLITE_PERM';
    case 'EMFILE':
    case 'ENFILE':
    case 'ENOTDIR':
    case 'EISDIR':
      return 'SQLITE_CANTOPEN';
    case 'EBUSY':
    case 'EAGAIN':
    case 'EWOULDBLOCK':
      return 'SQLITE_BUSY';
    case 'ENOMEM':
      return 'SQLITE_NOMEM';
    default:
      return 'SQLITE_IOERR';
  }
}

const SQLITE_MESSAGES: Record<string, string> = {
  SQLITE_IOERR: 'disk I/O error',
  SQLITE_FULL: 'database or disk is full',
  SQLITE_READONLY: 'attempt to write a readonly database',
  SQLITE_PERM: 'access permission denied',
  SQLITE_CANTOPEN: 'unable to open database file',
  SQLITE_BUSY: 'database is locked',
  SQLITE_NOMEM: 'out of memory',
};

/**
 * An error shaped like better-sqlite3's `SqliteError` (`name`, `code`, SQLite's message), standing
 * for the errno `cause` the harness injected before `step`.
 */
export function sqliteErrorFor(cause: unknown, step?: string): Error & { code: string } {
  const errno = (cause as { code?: unknown } | null)?.code;
  const code = sqliteCodeForErrno(typeof errno === 'string' ? errno : 'EIO', step);
  const error = new Error(SQLITE_MESSAGES[code] ?? code, { cause }) as Error & { code: string };
  error.name = 'SqliteError';
  error.code = code;
  return error;
}

/**
 * `@tidemark/sqlite` as an engine driver. better-sqlite3 has no custom VFS, so the error sweep
 * injects through the store's `beforeStorageStep` hook, before every statement (BEGIN, each
 * SELECT/INSERT/UPDATE/DELETE, COMMIT, ROLLBACK, pragmas, opening and migrating), throwing a
 * `SqliteError`-shaped error of the code {@link sqliteCodeForErrno} gives; the real-fault rows add
 * SIGKILL, corruption, truncation, locks and a full database.
 */
export function sqliteDriver(options: StoreOptions = {}): EngineHarnessDriver {
  return {
    name: 'sqlite',
    kind: 'engine',
    injectsSteps: true,
    // Group commit (contract §6.5): appends to different sessions issued together share a commit, so
    // the step sweep and the SIGKILL writer issue them together.
    workload: GROUP_COMMIT_WORKLOAD,
    durabilities: ['strict', 'relaxed'],
    async create(mode) {
      const dir = await fsp.mkdtemp(join(tmpdir(), 'tidemark-sqlite-'));
      const path = join(dir, 'store.db');
      const opts = { ...options, ...(mode?.durability !== undefined && { durability: mode.durability }) };
      return {
        open: (inject) =>
          openSqliteStore(
            inject === undefined
              ? { ...opts, path }
              : {
                  ...opts,
                  path,
                  beforeStorageStep(step, id) {
                    try {
                      inject(step, id);
                    } catch (error) {
                      throw sqliteErrorFor(error, step);
                    }
                  },
                },
          ),
        destroy: () => fsp.rm(dir, { recursive: true, force: true }),
      };
    },
    real: {
      location: 'file',
      module: SQLITE_OPEN_SPEC.module,
      factory: 'openSqliteStore',
      options: (path) => ({ path }),
      appendsTogether: true,
    },
    realFaults: sqliteRealFaults(),
    // The race's power loss last: two instances racing for one session, traced like the workload.
    engineChecks: [sqliteSettingsCheck('sqlite'), sqlitePowerLoss('sqlite'), sqliteRacePowerLoss('sqlite')],
  };
}
