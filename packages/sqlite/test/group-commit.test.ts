// Group commit (contract §6.5): appends to different sessions issued together share one
// transaction, each batch all or nothing on its own, none acknowledged before its COMMIT returned.
import { join } from 'node:path';
import { isTidemarkError } from '@tidemark/core';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_GROUP } from '../src/group-commit.js';
import { openSqliteStore, type SqliteStorageStep, type SqliteStore } from '../src/index.js';
import { connectionOf } from '../src/store.js';
import { events, rejectsWith, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

function injected(code: string): Error & { code: string } {
  const error = new Error(`injected ${code}`) as Error & { code: string };
  error.name = 'SqliteError';
  error.code = code;
  return error;
}

type Fault = (step: SqliteStorageStep, id: string | undefined) => void;

/** A store whose step hook records every step and runs `fault` (replaceable) before it. */
async function recordingStore(options: { durability?: 'relaxed' } = {}) {
  const path = join(tempDir(), 'store.db');
  const steps: string[] = [];
  const state: { fault: Fault | undefined } = { fault: undefined };
  const store = await openSqliteStore({
    ...options,
    path,
    beforeStorageStep(step, id) {
      steps.push(id === undefined ? step : `${step} ${id}`);
      state.fault?.(step, id);
    },
  });
  return { store, path, steps, state };
}

/** Creates `ids` with `count` stored events each. */
async function seed(store: SqliteStore, ids: readonly string[], count = 2): Promise<void> {
  for (const id of ids) {
    await store.create({ id });
    await store.append(id, events(0, count, 2));
  }
}

/** The typed error an append rejected with, or undefined when it did not reject with one. */
function rejection(outcome: PromiseSettledResult<unknown> | undefined, code: string) {
  if (outcome?.status !== 'rejected' || !isTidemarkError(outcome.reason, code as never)) return undefined;
  return outcome.reason;
}

const count = (steps: readonly string[], name: string) =>
  steps.filter((s) => s.split(' ')[0] === name).length;
const counted = (steps: readonly string[], prefix: string) =>
  steps.filter((s) => s.startsWith(prefix)).length;

describe('group commit', () => {
  it('commits appends to different sessions issued together in one transaction', async () => {
    const { store, steps } = await recordingStore();
    const ids = ['a', 'b', 'c', 'd'];
    await seed(store, ids);
    steps.length = 0;
    const results = await Promise.all(ids.map((id) => store.append(id, events(2, 3, 2))));
    expect(results).toEqual(ids.map(() => ({ nextSeq: 5 })));
    expect(counted(steps, 'BEGIN IMMEDIATE')).toBe(1);
    expect(counted(steps, 'COMMIT')).toBe(1);
    expect(counted(steps, 'SAVEPOINT')).toBe(4);
    for (const id of ids) expect((await store.load(id)).events).toEqual(events(0, 5, 2));
    await store.close();
  });

  it('fails a CONFLICT or NOT_FOUND batch alone; the others of its group land', async () => {
    const { store, steps } = await recordingStore();
    await seed(store, ['a', 'b', 'c']);
    steps.length = 0;
    const [a, b, c, ghost] = await Promise.allSettled([
      store.append('a', events(2, 2)),
      store.append('b', events(7, 2)), // a gap: CONFLICT
      store.append('c', events(2, 1)),
      store.append('ghost', events(0, 1)), // never created: NOT_FOUND
    ]);
    expect(counted(steps, 'BEGIN IMMEDIATE')).toBe(1);
    expect(a).toEqual({ status: 'fulfilled', value: { nextSeq: 4 } });
    expect(c).toEqual({ status: 'fulfilled', value: { nextSeq: 3 } });
    expect(rejection(b, 'CONFLICT')).toBeDefined();
    expect(rejection(ghost, 'NOT_FOUND')).toBeDefined();
    expect((await store.load('a')).events).toHaveLength(4);
    expect((await store.load('b')).events).toEqual(events(0, 2, 2));
    expect((await store.load('c')).events).toHaveLength(3);
    expect(await store.has('ghost')).toBe(false);
    await store.close();
  });

  it('rolls back a batch whose statement fails to its savepoint, failing that append alone', async () => {
    const { store, state } = await recordingStore();
    await seed(store, ['a', 'b', 'c']);
    state.fault = (step, id) => {
      if (step === 'INSERT events' && id === 'b') throw injected('SQLITE_IOERR');
    };
    const [a, b, c] = await Promise.allSettled(['a', 'b', 'c'].map((id) => store.append(id, events(2, 2))));
    state.fault = undefined;
    expect(a?.status).toBe('fulfilled');
    expect(c?.status).toBe('fulfilled');
    expect(rejection(b, 'IO')).toBeDefined();
    // Nothing of b's batch: not its sessions row update either.
    expect((await store.load('b')).events).toHaveLength(2);
    expect((await store.list()).sessions.find((s) => s.id === 'b')?.eventCount).toBe(2);
    expect((await store.load('a')).events).toHaveLength(4);
    await store.append('b', events(2, 2));
    await store.close();
  });

  it('fails every append of the group with a typed error when its COMMIT fails, and stores none', async () => {
    const { store, state } = await recordingStore();
    const ids = ['a', 'b', 'c'];
    await seed(store, ids);
    let failed = false;
    state.fault = (step) => {
      if (step === 'COMMIT' && !failed) {
        failed = true;
        throw injected('SQLITE_IOERR');
      }
    };
    const outcomes = await Promise.allSettled(ids.map((id) => store.append(id, events(2, 2))));
    state.fault = undefined;
    outcomes.forEach((outcome, i) => {
      expect(outcome.status).toBe('rejected');
      const error = (outcome as PromiseRejectedResult).reason;
      expect(isTidemarkError(error, 'IO')).toBe(true);
      expect(error.sessionId).toBe(ids[i]);
    });
    for (const id of ids) expect((await store.load(id)).events).toEqual(events(0, 2, 2));
    // The store stays usable: the same batches go in now.
    await Promise.all(ids.map((id) => store.append(id, events(2, 2))));
    for (const id of ids) expect((await store.load(id)).events).toHaveLength(4);
    await store.close();
  });

  it('fails the whole group when SQLite rolled the transaction back under a batch', async () => {
    // Guards the batches before the failing one: their savepoints died with the transaction.
    const { store, state } = await recordingStore();
    await seed(store, ['a', 'b']);
    const db = connectionOf.get(store)!;
    state.fault = (step, id) => {
      if (step === 'INSERT events' && id === 'b') {
        state.fault = undefined;
        db.exec('ROLLBACK'); // what SQLite does itself after some FULL, IOERR and BUSY errors
        throw injected('SQLITE_FULL');
      }
    };
    const [a, b] = await Promise.allSettled(['a', 'b'].map((id) => store.append(id, events(2, 2))));
    expect(rejection(a, 'IO')).toBeDefined();
    expect(rejection(b, 'IO')).toBeDefined();
    for (const id of ['a', 'b']) expect((await store.load(id)).events).toHaveLength(2);
    await store.append('a', events(2, 2));
    await store.close();
  });

  it('resolves no append before its batch is committed and visible to another connection', async () => {
    const { store, path } = await recordingStore();
    const ids = ['a', 'b', 'c'];
    await seed(store, ids);
    const reader = new Database(path, { readonly: true });
    const stored = reader.prepare('SELECT count(*) FROM events WHERE session_id = ?').pluck();
    const seenAtResolve: number[] = [];
    await Promise.all(
      ids.map((id) =>
        store.append(id, events(2, 3)).then(() => seenAtResolve.push(stored.get(id) as number)),
      ),
    );
    expect(seenAtResolve).toEqual([5, 5, 5]);
    reader.close();
    await store.close();
  });

  it('keeps the per-session order: a session queued twice lands twice, in order, in two groups', async () => {
    const { store, steps } = await recordingStore();
    await seed(store, ['a', 'b']);
    steps.length = 0;
    const order: string[] = [];
    const track = (label: string) => (result: unknown) => {
      order.push(label);
      return result;
    };
    const results = await Promise.all([
      store.append('a', events(2, 1)).then(track('a1')),
      store.append('b', events(2, 1)).then(track('b1')),
      store.append('a', events(3, 1)).then(track('a2')),
      store.append('a', events(4, 1)).then(track('a3')),
    ]);
    expect(results).toEqual([{ nextSeq: 3 }, { nextSeq: 3 }, { nextSeq: 4 }, { nextSeq: 5 }]);
    expect(order.indexOf('a1')).toBeLessThan(order.indexOf('a2'));
    expect(order.indexOf('a2')).toBeLessThan(order.indexOf('a3'));
    expect(counted(steps, 'BEGIN IMMEDIATE')).toBe(3);
    expect((await store.load('a')).events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4]);
    await store.close();
  });

  it('commits a relaxed group at synchronous=FULL only when one of its batches closes a turn', async () => {
    const { store, steps } = await recordingStore({ durability: 'relaxed' });
    await seed(store, ['a', 'b']);
    steps.length = 0;
    await Promise.all([store.append('a', events(2, 1, 0)), store.append('b', events(2, 1, 0))]);
    expect(count(steps, 'PRAGMA')).toBe(0);
    steps.length = 0;
    // b's batch ends with a boundary (seq 3, every 2nd is turn/end).
    await Promise.all([store.append('a', events(3, 1, 0)), store.append('b', events(3, 1, 2))]);
    expect(steps[0]).toBe('PRAGMA synchronous');
    expect(counted(steps, 'BEGIN IMMEDIATE')).toBe(1);
    expect(steps.at(-1)).toBe('PRAGMA synchronous');
    await store.close();
  });

  it('splits appends beyond MAX_GROUP into the next group, each in its own transaction', async () => {
    // Guards the bound on one synchronous call: 300 sessions at once are not one transaction.
    const { store, steps } = await recordingStore();
    const ids = Array.from({ length: MAX_GROUP + 44 }, (_, i) => `s${i}`);
    for (const id of ids) await store.create({ id });
    steps.length = 0;
    const results = await Promise.all(ids.map((id) => store.append(id, events(0, 1))));
    expect(results.every((r) => r.nextSeq === 1)).toBe(true);
    expect(counted(steps, 'BEGIN IMMEDIATE')).toBe(2);
    expect(counted(steps, 'SAVEPOINT')).toBe(ids.length);
    expect((await store.list({ limit: 500 })).sessions).toHaveLength(ids.length);
    await store.close();
  });

  it('names each session in the errors of a relaxed group whose sync pragma fails', async () => {
    const { store, state } = await recordingStore({ durability: 'relaxed' });
    await seed(store, ['a', 'b']);
    state.fault = (step) => {
      if (step === 'PRAGMA synchronous') {
        state.fault = undefined;
        throw injected('SQLITE_IOERR');
      }
    };
    const outcomes = await Promise.allSettled(['a', 'b'].map((id) => store.append(id, events(2, 2, 2))));
    expect(outcomes.map((o) => rejection(o, 'IO')?.sessionId)).toEqual(['a', 'b']);
    for (const id of ['a', 'b']) expect((await store.load(id)).events).toHaveLength(2);
    await store.close();
  });

  it('lets close() settle appends waiting for their group: each lands or is CLOSED, none hangs', async () => {
    const { store, path } = await recordingStore();
    await seed(store, ['a', 'b']);
    const pending = ['a', 'b'].map((id) => store.append(id, events(2, 1)));
    // Let both appends reach the group (their queue turns are microtasks), then close before it commits.
    for (let i = 0; i < 5; i++) await Promise.resolve();
    await store.close();
    const outcomes = await Promise.allSettled(pending);
    const reopened = await openSqliteStore({ path });
    for (const [i, id] of ['a', 'b'].entries()) {
      const outcome = outcomes[i]!;
      if (outcome.status === 'rejected') expect(rejection(outcome, 'CLOSED')).toBeDefined();
      expect((await reopened.load(id)).events).toHaveLength(outcome.status === 'fulfilled' ? 3 : 2);
    }
    expect(outcomes.some((o) => o.status === 'fulfilled')).toBe(true);
    await rejectsWith(store.append('a', events(3, 1)), 'CLOSED');
    await reopened.close();
  });
});
