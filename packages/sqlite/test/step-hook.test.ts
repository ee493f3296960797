// The `beforeStorageStep` fault hook: what it throws must take the path of a real driver error
// (rollback, then mapSqliteError), at every step, and leave no transaction or half write behind.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore, type SqliteStorageStep, type SqliteStoreOptions } from '../src/index.js';
import { connectionOf } from '../src/store.js';
import { events, rejectsWith, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

/** An error shaped like better-sqlite3's SqliteError, as the fault harness throws it. */
function sqliteError(code: string): Error & { code: string } {
  const error = new Error(`injected ${code}`) as Error & { code: string };
  error.name = 'SqliteError';
  error.code = code;
  return error;
}

interface Recorder {
  steps: string[];
  /** Throws `error` at the next step named `step` (its `skip`-th occurrence), once. */
  failAt(step: SqliteStorageStep, error: unknown, skip?: number): void;
  hook: NonNullable<SqliteStoreOptions['beforeStorageStep']>;
}

function recorder(): Recorder {
  const plans: { step: string; error: unknown; skip: number }[] = [];
  const steps: string[] = [];
  return {
    steps,
    failAt(step, error, skip = 0) {
      plans.push({ step, error, skip });
    },
    hook(step) {
      steps.push(step);
      const i = plans.findIndex((plan) => plan.step === step);
      if (i === -1) return;
      const plan = plans[i]!;
      if (plan.skip-- > 0) return;
      plans.splice(i, 1);
      throw plan.error;
    },
  };
}

async function open(path: string, rec?: Recorder) {
  return openSqliteStore(rec === undefined ? { path } : { path, beforeStorageStep: rec.hook });
}

function dbOf(store: object): Database.Database {
  return connectionOf.get(store as never)!;
}

describe('beforeStorageStep', () => {
  it('is called before every statement of an append, in order', async () => {
    const rec = recorder();
    const store = await open(join(tempDir(), 'store.db'), rec);
    expect(rec.steps).toEqual(
      expect.arrayContaining(['open', 'PRAGMA synchronous', 'BEGIN IMMEDIATE', 'CREATE TABLE', 'COMMIT']),
    );
    await store.create({ id: 's' });
    rec.steps.length = 0;
    await store.append('s', events(0, 3));
    expect(rec.steps).toEqual([
      'BEGIN IMMEDIATE',
      'SELECT sessions',
      'SELECT events', // no sessions row yet: are there events without one (a damaged row)?
      'INSERT sessions',
      'INSERT events',
      'INSERT events',
      'INSERT events',
      'COMMIT',
    ]);
    rec.steps.length = 0;
    await store.delete('s');
    expect(rec.steps).toEqual(['BEGIN IMMEDIATE', 'DELETE events', 'DELETE sessions', 'COMMIT']);
    await store.close();
  });

  it.each([
    ['SQLITE_IOERR', 'IO', false],
    ['SQLITE_FULL', 'IO', true],
    ['SQLITE_BUSY', 'IO', true],
    ['SQLITE_READONLY', 'IO', false],
    ['SQLITE_CANTOPEN', 'IO', false],
    ['SQLITE_CORRUPT', 'CORRUPT', undefined],
  ] as const)('maps a thrown %s like the real one (%s)', async (code, expected, retryable) => {
    const rec = recorder();
    const store = await open(join(tempDir(), 'store.db'), rec);
    await store.create({ id: 's' });
    await store.append('s', events(0, 2));
    rec.failAt('INSERT events', sqliteError(code), 1);
    const error = await rejectsWith(store.append('s', events(2, 3)), expected);
    if (expected === 'IO') {
      expect(error.errno).toBe(code);
      expect(error.retryable).toBe(retryable);
    }
    expect(error.sessionId).toBe('s');
    expect(dbOf(store).inTransaction).toBe(false);
    // The batch rolled back whole: the first event of it is not there, the summary is unchanged.
    const loaded = await store.load('s');
    expect(loaded.events.map((e) => e.seq)).toEqual([0, 1]);
    expect(loaded.summary.eventCount).toBe(2);
    await store.append('s', events(2, 3));
    expect((await store.load('s')).events).toHaveLength(5);
    await store.close();
  });

  it('a real better-sqlite3 SqliteError thrown by the hook is reported the same way', async () => {
    const rec = recorder();
    const store = await open(join(tempDir(), 'store.db'), rec);
    rec.failAt('SELECT sessions', new Database.SqliteError('disk I/O error', 'SQLITE_IOERR_READ'));
    const error = await rejectsWith(store.has('x'), 'IO');
    expect(error.errno).toBe('SQLITE_IOERR_READ');
    expect(await store.has('x')).toBe(false);
    await store.close();
  });

  it.each(['BEGIN IMMEDIATE', 'SELECT sessions', 'INSERT sessions', 'INSERT events', 'COMMIT'] as const)(
    'a fault at %s of a first append stores nothing and leaves no transaction open',
    async (step) => {
      const rec = recorder();
      const path = join(tempDir(), 'store.db');
      const store = await open(path, rec);
      await store.create({ id: 's', title: 't' });
      rec.failAt(step, sqliteError('SQLITE_IOERR'));
      const error = await rejectsWith(store.append('s', events(0, 3)), 'IO');
      expect(error.errno).toBe('SQLITE_IOERR');
      expect(dbOf(store).inTransaction).toBe(false);
      expect(await store.has('s')).toBe(false);
      // Still pending: the retry writes the header and the batch together.
      expect(await store.append('s', events(0, 3))).toEqual({ nextSeq: 3 });
      await store.close();
      const reopened = await open(path);
      const loaded = await reopened.load('s');
      expect(loaded.events).toHaveLength(3);
      expect(loaded.summary.title).toBe('t');
      await reopened.close();
    },
  );

  it('a failed COMMIT of an update changes nothing, in storage or in the next answer', async () => {
    const rec = recorder();
    const store = await open(join(tempDir(), 'store.db'), rec);
    await store.create({ id: 's', title: 'old' });
    await store.append('s', events(0, 1));
    rec.failAt('COMMIT', sqliteError('SQLITE_FULL'));
    await rejectsWith(store.update('s', { title: 'new' }), 'IO');
    expect(dbOf(store).inTransaction).toBe(false);
    expect((await store.load('s')).summary.title).toBe('old');
    expect((await store.list()).sessions[0]?.title).toBe('old');
    await store.close();
  });

  // Regression: a ROLLBACK that fails after a failed step used to leave the transaction open, and
  // the statements run outside transactions (has, list, read, create) then read the failed
  // append's uncommitted rows: a session that was never stored answered `has() = true`.
  it('a failed ROLLBACK after a failed append does not let later reads see the uncommitted rows', async () => {
    const rec = recorder();
    const path = join(tempDir(), 'store.db');
    const store = await open(path, rec);
    await store.create({ id: 's' });
    rec.failAt('INSERT events', sqliteError('SQLITE_IOERR'), 1);
    rec.failAt('ROLLBACK', sqliteError('SQLITE_BUSY'));
    await rejectsWith(store.append('s', events(0, 3)), 'IO');
    expect(await store.has('s')).toBe(false);
    expect(dbOf(store).inTransaction).toBe(false);
    expect((await store.list()).sessions).toEqual([]);
    await rejectsWith(store.load('s'), 'NOT_FOUND');
    await store.append('s', events(0, 3));
    await store.close();
    const reopened = await open(path);
    expect((await reopened.load('s')).events).toHaveLength(3);
    await reopened.close();
  });

  it('a failed ROLLBACK while reading does not hold the transaction across later calls', async () => {
    const rec = recorder();
    const store = await open(join(tempDir(), 'store.db'), rec);
    await store.create({ id: 's' });
    await store.append('s', events(0, 2));
    rec.failAt('SELECT events', sqliteError('SQLITE_IOERR'));
    rec.failAt('ROLLBACK', sqliteError('SQLITE_IOERR'));
    await rejectsWith(store.load('s'), 'IO');
    const read: number[] = [];
    for await (const event of store.read('s')) read.push(event.seq);
    expect(read).toEqual([0, 1]);
    expect(dbOf(store).inTransaction).toBe(false);
    await store.close();
  });

  it.each([
    'open',
    'PRAGMA journal_mode',
    'PRAGMA synchronous',
    'PRAGMA user_version',
    'BEGIN IMMEDIATE',
    'CREATE TABLE',
    'COMMIT',
  ] as const)('a fault at %s while opening is a typed error, and the next open works', async (step) => {
    const rec = recorder();
    const path = join(tempDir(), 'store.db');
    rec.failAt(step, sqliteError('SQLITE_CANTOPEN'));
    const error = await rejectsWith(open(path, rec), 'IO');
    expect(error.errno).toBe('SQLITE_CANTOPEN');
    const store = await open(path);
    await store.create({ id: 's' });
    await store.append('s', events(0, 1));
    expect(await store.has('s')).toBe(true);
    await store.close();
  });

  it('a fault at a tail cut leaves the tail in place', async () => {
    const rec = recorder();
    const store = await open(join(tempDir(), 'store.db'), rec);
    await store.create({ id: 's' });
    await store.append('s', events(0, 5, 3));
    rec.failAt('DELETE events', sqliteError('SQLITE_IOERR'));
    await rejectsWith(store.load('s', { tail: 'cut' }), 'IO');
    const loaded = await store.load('s');
    expect(loaded.events).toHaveLength(5);
    expect(loaded.interrupted).toBe(true);
    expect((await store.load('s', { tail: 'cut' })).events).toHaveLength(3);
    await store.close();
  });

  it('must be a function', async () => {
    await rejectsWith(
      openSqliteStore({ path: join(tempDir(), 'store.db'), beforeStorageStep: 'no' as never }),
      'INVALID',
    );
  });
});
