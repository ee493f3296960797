// Opening the database file: created 0600 when missing (never through a symbolic link), then the
// connection's pragmas and the schema migration, retried while another opener holds the locks.
import { closeSync, constants, lstatSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { isENOENT, TidemarkError, toIoError } from '@tidemark/core';
import Database from 'better-sqlite3';
import { mapSqliteError, sqliteCodeOf } from './errors.js';
import type { SqliteStoreOptions } from './options.js';
import { migrate, refuseUnknown } from './schema.js';

/**
 * Opens the database of validated options `o`, sets its pragmas, migrates it, and hands the
 * connection to `build`. Whatever fails, `build` included, closes the connection and rejects with
 * the mapped error: an unreadable database is never presented as an empty one.
 */
export async function openDatabase<T>(
  o: SqliteStoreOptions,
  build: (db: Database.Database) => T,
): Promise<T> {
  const file = o.path;
  const { lstatError } = file === ':memory:' ? {} : prepareFile(file);
  let db: Database.Database | undefined;
  try {
    try {
      o.beforeStorageStep?.('open');
      db = new Database(file, { timeout: o.busyTimeoutMs ?? 5000 });
    } catch (error) {
      // better-sqlite3 checks the directory itself and throws a bare TypeError; the file system's
      // own answer (ENOTDIR, EACCES, …) says more.
      if (error instanceof TypeError && lstatError !== undefined)
        throw toIoError(lstatError, `opening ${file}`);
      throw error;
    }
    const opened = db;
    await retryWhileBusy(opened, o.busyTimeoutMs ?? 5000, () => configure(opened, o));
    return build(db);
  } catch (error) {
    try {
      db?.close();
    } catch {
      // The open error is the one to report.
    }
    throw mapSqliteError(error, { file, what: `opening ${file}` });
  }
}

/** The pragmas of a store connection, then the migration. Every step is idempotent. */
function configure(db: Database.Database, o: SqliteStoreOptions): void {
  const file = o.path;
  const step = o.beforeStorageStep;
  // Refuse a newer or foreign database while it is untouched: switching to WAL rewrites its header.
  refuseUnknown(db, file, step);
  if (file !== ':memory:') {
    step?.('PRAGMA journal_mode');
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (mode !== 'wal')
      throw new TidemarkError('IO', `opening ${file}: SQLite refused WAL mode (got ${String(mode)})`);
  }
  step?.('PRAGMA synchronous');
  db.pragma(`synchronous = ${o.durability === 'relaxed' ? 'NORMAL' : 'FULL'}`);
  step?.('PRAGMA foreign_keys');
  db.pragma('foreign_keys = ON');
  if (o.maxPageCount !== undefined) {
    step?.('PRAGMA max_page_count');
    db.pragma(`max_page_count = ${o.maxPageCount}`);
  }
  migrate(db, file, step);
}

/**
 * Creates the database file 0600 (and its directory 0700) when it is missing, and refuses a
 * symbolic link at the path: writes never follow a planted link (contract §5). An existing file is
 * left to SQLite, so a path under a regular file fails as SQLITE_CANTOPEN.
 */
function prepareFile(file: string): { lstatError?: unknown } {
  let kind: 'absent' | 'link' | 'other';
  let lstatError: unknown;
  try {
    kind = lstatSync(file).isSymbolicLink() ? 'link' : 'other';
  } catch (error) {
    kind = isENOENT(error) ? 'absent' : 'other';
    if (kind === 'other') lstatError = error;
  }
  if (kind === 'link') {
    throw new TidemarkError(
      'IO',
      `opening ${file}: the path is a symbolic link, which tidemark does not follow`,
      {
        errno: 'ELOOP',
      },
    );
  }
  if (kind !== 'absent') return lstatError === undefined ? {} : { lstatError };
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    closeSync(
      openSync(file, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600),
    );
  } catch (error) {
    // Another opener created it between our look and our create: that is fine.
    if ((error as { code?: unknown }).code === 'EEXIST') return {};
    throw toIoError(error, `creating ${file}`);
  }
  return {};
}

/**
 * Runs the steps of opening again while they fail with SQLITE_BUSY, for up to `timeoutMs`. Several
 * processes opening one fresh file at once contend for the locks of the journal-mode switch and
 * the migration, and some of those paths answer BUSY at once instead of waiting in the busy
 * handler (a separate-process test saw it when the version header came to be read before the
 * switch). Every step is idempotent, so a retry is safe.
 */
async function retryWhileBusy(db: Database.Database, timeoutMs: number, steps: () => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      steps();
      return;
    } catch (error) {
      if (!sqliteCodeOf(error)?.startsWith('SQLITE_BUSY') || Date.now() >= deadline) throw error;
      // A retry must start outside any transaction (a BUSY COMMIT whose ROLLBACK failed too leaves
      // one open, and pragmas refuse to run inside it): end it, or give up with the BUSY.
      if (db.inTransaction) {
        try {
          db.exec('ROLLBACK');
        } catch {
          throw error;
        }
        if (db.inTransaction) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
    }
  }
}
