// Real faults on the real file system and engine (contract §7.3). Each test ends with the invariants:
// a typed error or success, no false absence, no acknowledged event lost, the store still writable.
import { closeSync, mkdirSync, openSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { isTidemarkError } from '@tidemark/core';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore, WHOLE_DATABASE } from '../src/index.js';
import {
  assertInvariants,
  events,
  expectNoDamage,
  rejectsWith,
  removeTempDirs,
  tempDir,
  verifyFile,
} from './helpers.js';

afterEach(removeTempDirs);

async function storeWithData(path: string, count = 6) {
  const store = await openSqliteStore({ path });
  await store.create({ id: 's', cwd: '/w' });
  await store.append('s', events(0, count, 3));
  return store;
}

describe('opening', () => {
  it('a path under a regular file is IO (SQLITE_CANTOPEN), never an empty store', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'file'), 'x');
    const error = await rejectsWith(openSqliteStore({ path: join(dir, 'file', 'store.db') }), 'IO');
    expect(error.errno).toBe('SQLITE_CANTOPEN');
    expect(error.retryable).toBe(false);
  });

  it('a missing parent under a regular file is IO too (ENOTDIR)', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'file'), 'x');
    const error = await rejectsWith(openSqliteStore({ path: join(dir, 'file', 'sub', 'store.db') }), 'IO');
    expect(error.errno).toBe('ENOTDIR');
  });

  it('creates missing directories 0700', async () => {
    const { statSync } = await import('node:fs');
    const dir = join(tempDir(), 'a', 'b');
    const store = await openSqliteStore({ path: join(dir, 'store.db') });
    expect((statSync(dir).mode & 0o777).toString(8)).toBe('700');
    await store.close();
  });

  it('a path that is a directory is IO', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'store.db'));
    expect((await rejectsWith(openSqliteStore({ path: join(dir, 'store.db') }), 'IO')).errno).toBe(
      'SQLITE_CANTOPEN',
    );
  });

  it('refuses to follow a symbolic link planted at the path', async () => {
    const dir = tempDir();
    const target = join(dir, 'target.db');
    await (await storeWithData(target)).close();
    symlinkSync(target, join(dir, 'link.db'));
    const error = await rejectsWith(openSqliteStore({ path: join(dir, 'link.db') }), 'IO');
    expect(error.errno).toBe('ELOOP');
  });

  it('a database whose header is overwritten is CORRUPT (SQLITE_NOTADB) at open, and verify says so', async () => {
    const path = join(tempDir(), 'store.db');
    await (await storeWithData(path)).close();
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.alloc(100, 0x41), 0, 100, 0);
    closeSync(fd);
    const error = await rejectsWith(openSqliteStore({ path }), 'CORRUPT');
    expect(error.location).toEqual({ file: path, offset: 0 });
    expect((error.cause as { code?: string }).code).toBe('SQLITE_NOTADB');
    // verify opens the store first, so it reports the same.
    await rejectsWith(verifyFile(path), 'CORRUPT');
  });
});

describe('damaged pages', () => {
  it('a trashed b-tree page of events is CORRUPT for load and verify; the session is still listed', async () => {
    const path = join(tempDir(), 'store.db');
    const store = await openSqliteStore({ path });
    await store.create({ id: 's' });
    for (let i = 0; i < 10; i++) await store.append('s', events(i * 100, 100, 10));
    await store.create({ id: 'other' });
    await store.append('other', events(0, 2, 2));
    await store.close();

    const db = new Database(path, { readonly: true });
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const leaves = db
      .prepare(`SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY pageno`)
      .pluck()
      .all() as number[];
    db.close();
    expect(leaves.length).toBeGreaterThan(3);
    const victim = leaves[Math.floor(leaves.length / 2)]!;
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (victim - 1) * pageSize);
    closeSync(fd);

    const reopened = await openSqliteStore({ path });
    expect(await reopened.has('s')).toBe(true);
    expect((await reopened.list()).sessions.map((s) => s.id).sort()).toEqual(['other', 's']);
    const error = await rejectsWith(reopened.load('s'), 'CORRUPT');
    expect(error.location).toMatchObject({ file: path });
    const report = await reopened.verify();
    expect(report.problems).toContainEqual(
      expect.objectContaining({ kind: 'corrupt', sessionId: WHOLE_DATABASE, file: path }),
    );
    expect(report.sessions.find((s) => s.sessionId === 's')?.status).toBe('corrupt');
    expect(report.sessions.find((s) => s.sessionId === 'other')?.status).toBe('ok');
    // Writing on: either it works, or it is a typed error; never an untyped crash.
    for (const attempt of [reopened.append('other', events(2, 1)), reopened.create({ id: 'new' })]) {
      await attempt.then(
        () => undefined,
        (e: unknown) => expect(isTidemarkError(e)).toBe(true),
      );
    }
    await reopened.close();
  });
});

describe('a full database', () => {
  it('max_page_count reached mid-batch is IO SQLITE_FULL, stores nothing partial, and the store writes on', async () => {
    const path = join(tempDir(), 'store.db');
    const seed = await storeWithData(path, 6);
    await seed.close();
    const db = new Database(path);
    const pages = db.pragma('page_count', { simple: true }) as number;
    db.close();

    const store = await openSqliteStore({ path, maxPageCount: pages + 2 });
    const big = events(6, 200).map((e) => ({ ...e, data: { blob: 'y'.repeat(2000), seq: e.seq } }));
    const error = await rejectsWith(store.append('s', big), 'IO');
    expect(error.errno).toBe('SQLITE_FULL');
    expect(error.retryable).toBe(true);
    // Nothing of the batch is visible, the session is not absent, and a small append still fits.
    const loaded = await store.load('s');
    expect(loaded.events).toEqual(events(0, 6, 3));
    expect(loaded.summary.eventCount).toBe(6);
    await assertInvariants(store, 's', events(0, 6, 3));
    await store.close();

    // Lifting the limit (a new connection without it) lets the same batch land.
    const roomy = await openSqliteStore({ path });
    const next = (await roomy.load('s')).events.length;
    expect(
      await roomy.append(
        's',
        big.map((e, i) => ({ ...e, seq: next + i })),
      ),
    ).toEqual({ nextSeq: next + 200 });
    await assertInvariants(roomy, 's', events(0, 6, 3));
    await roomy.close();
    await expectNoDamage(path);
  });

  it('a first batch that does not fit leaves the session pending and invisible, then lands', async () => {
    const path = join(tempDir(), 'store.db');
    await (await openSqliteStore({ path })).close();
    const db = new Database(path);
    const pages = db.pragma('page_count', { simple: true }) as number;
    db.close();
    const store = await openSqliteStore({ path, maxPageCount: pages + 1 });
    await store.create({ id: 'p', title: 'kept' });
    const big = events(0, 50).map((e) => ({ ...e, data: 'z'.repeat(3000) }));
    expect((await rejectsWith(store.append('p', big), 'IO')).errno).toBe('SQLITE_FULL');
    expect(await store.has('p')).toBe(false);
    await rejectsWith(store.create({ id: 'p' }), 'ALREADY_EXISTS'); // still reserved here
    expect(await store.append('p', events(0, 1))).toEqual({ nextSeq: 1 });
    expect((await store.load('p')).summary.title).toBe('kept');
    await store.close();
  });
});

describe('after close', () => {
  it('every call is CLOSED, including a read stream that was open', async () => {
    const path = join(tempDir(), 'store.db');
    const store = await storeWithData(path, 2500);
    const stream = store.read('s')[Symbol.asyncIterator]();
    expect((await stream.next()).value).toMatchObject({ seq: 0 });
    await store.close();
    // The first page is buffered; the next page query sees the closed store.
    let error: unknown;
    try {
      for (;;) if ((await stream.next()).done) break;
    } catch (e) {
      error = e;
    }
    expect(isTidemarkError(error, 'CLOSED')).toBe(true);
  });
});
