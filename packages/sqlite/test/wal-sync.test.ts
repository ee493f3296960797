// durability: 'relaxed' ends its loss window at close() (contract §4) even while another connection
// keeps the database open: only the last connection's close checkpoints and syncs the WAL, so
// close() fsyncs the `-wal` file itself. No test can cut the power, so these observe the fsync.
import { fstatSync, fsyncSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TidemarkError } from '@tidemark/core';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { connectionOf, openSqliteStoreWith } from '../src/store.js';
import { syncWalFile, walToSyncOnClose } from '../src/wal.js';
import { events, rejectsWith, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

function eio(): Error {
  return Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
}

describe('walToSyncOnClose', () => {
  it('names the -wal file in relaxed mode only', () => {
    expect(walToSyncOnClose('/d/s.db', 'relaxed')).toBe('/d/s.db-wal');
    expect(walToSyncOnClose('/d/s.db', 'strict')).toBeUndefined();
    expect(walToSyncOnClose('/d/s.db', undefined)).toBeUndefined();
    expect(walToSyncOnClose(':memory:', 'relaxed')).toBeUndefined();
  });
});

describe('syncWalFile', () => {
  it('fsyncs a descriptor of the file at the path', () => {
    const path = join(tempDir(), 's.db-wal');
    writeFileSync(path, 'frames');
    const synced: number[] = [];
    syncWalFile(path, (fd) => {
      synced.push(fstatSync(fd).ino);
      fsyncSync(fd);
    });
    expect(synced).toEqual([statSync(path).ino]);
  });

  it('has nothing to sync when the file does not exist', () => {
    const synced: number[] = [];
    syncWalFile(join(tempDir(), 'none.db-wal'), (fd) => synced.push(fd));
    expect(synced).toEqual([]);
  });

  it('turns an fsync failure into IO with the errno', () => {
    const path = join(tempDir(), 's.db-wal');
    writeFileSync(path, 'frames');
    let error: unknown;
    try {
      syncWalFile(path, () => {
        throw eio();
      });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'IO', errno: 'EIO' });
    expect((error as TidemarkError).message).toContain(path);
  });
});

describe('close() with another connection on the database', () => {
  it.each([
    ['relaxed', true],
    ['strict', false],
  ] as const)('in %s mode fsyncs the -wal file: %s', async (durability, syncs) => {
    const path = join(tempDir(), 'store.db');
    const synced: number[] = [];
    const store = await openSqliteStoreWith(
      { path, durability },
      {
        fsync(fd) {
          synced.push(fstatSync(fd).ino);
          fsyncSync(fd);
        },
      },
    );
    const bystander = new Database(path); // another process's connection, say
    expect(bystander.prepare('SELECT count(*) FROM sessions').pluck().get()).toBe(0);
    await store.create({ id: 's' });
    await store.append('s', events(0, 1, 1)); // a boundary: synced at commit
    await store.append('s', events(1, 1)); // relaxed: not synced at commit
    const wal = statSync(`${path}-wal`).ino;
    await store.close();
    expect(synced).toEqual(syncs ? [wal] : []);
    // The WAL was not checkpointed away (the bystander still has the database open).
    expect(bystander.prepare('SELECT count(*) FROM events').pluck().get()).toBe(2);
    bystander.close();
  });

  it('an fsync failure rejects close() with IO, and the store and its connection are closed', async () => {
    const path = join(tempDir(), 'store.db');
    const store = await openSqliteStoreWith(
      { path, durability: 'relaxed' },
      {
        fsync() {
          throw eio();
        },
      },
    );
    await store.create({ id: 's' });
    await store.append('s', events(0, 1));
    const db = connectionOf.get(store)!;
    const error = await rejectsWith(store.close(), 'IO');
    expect(error.errno).toBe('EIO');
    expect(error.message).toContain(`${path}-wal`);
    expect(db.open).toBe(false);
    await rejectsWith(store.has('s'), 'CLOSED');
    await store.close(); // a second close is a no-op, as before
  });
});

describe('a store opened by a relative path', () => {
  it('syncs its own WAL at close() after the process changed directory', async () => {
    const dir = tempDir();
    const elsewhere = tempDir();
    const before = process.cwd();
    const synced: number[] = [];
    process.chdir(dir);
    try {
      const store = await openSqliteStoreWith(
        { path: 'rel.db', durability: 'relaxed' },
        {
          fsync(fd) {
            synced.push(fstatSync(fd).ino);
            fsyncSync(fd);
          },
        },
      );
      const bystander = new Database(join(dir, 'rel.db')); // keeps the WAL from being checkpointed away
      await store.create({ id: 's' });
      await store.append('s', events(0, 1));
      const wal = statSync(join(dir, 'rel.db-wal')).ino;
      // A decoy where the relative path would now point.
      writeFileSync(join(elsewhere, 'rel.db-wal'), 'not this one');
      process.chdir(elsewhere);
      await store.close();
      expect(synced).toEqual([wal]);
      bystander.close();
    } finally {
      process.chdir(before);
    }
  });
});
