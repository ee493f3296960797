// Review findings: each test shows a bug that was fixed in src.
import { join } from 'node:path';
import type { SessionEvent, SessionStore } from '@tidemark/core';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore, READ_PAGE_SIZE, type SqliteStoreOptions, verifySqliteStore } from '../src/index.js';
import { damageKey, events, freshStore, rejectsWith, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

describe('read agrees with load about a summary that undercounts the log', () => {
  it('read rejects with CORRUPT instead of streaming a silently shortened history', async () => {
    const { store, path } = await freshStore();
    await store.create({ id: 's' });
    await store.append('s', events(0, 6, 2));
    // Damage: the summary row says 4 events, the events table holds 6.
    const db = new Database(path);
    db.prepare(`UPDATE sessions SET event_count = 4, committed_seq = 3 WHERE id = 's'`).run();
    db.close();
    const loadError = await rejectsWith(store.load('s'), 'CORRUPT');
    expect(loadError.location).toMatchObject({ table: 'events' });
    const seen: number[] = [];
    await rejectsWith(
      (async () => {
        for await (const event of store.read('s')) seen.push(event.seq);
      })(),
      'CORRUPT',
    );
    // A bounded range inside the counted part is still served.
    const head: number[] = [];
    for await (const event of store.read('s', { toSeq: 1 })) head.push(event.seq);
    expect(head).toEqual([0, 1]);
    await store.close();
  });
});

/** A file with two sessions of 3 events each, the store closed (its WAL checkpointed). */
async function twoSessions(): Promise<string> {
  const { store, path } = await freshStore();
  for (const id of ['alpha-session', 'bravo-session']) {
    await store.create({ id, cwd: '/w' });
    await store.append(id, events(0, 3, 3));
  }
  await store.close();
  return path;
}

async function drain(stream: AsyncIterable<{ seq: number }>): Promise<number[]> {
  const seqs: number[] = [];
  for await (const event of stream) seqs.push(event.seq);
  return seqs;
}

function storedEvents(path: string, id: string): number {
  const db = new Database(path, { readonly: true });
  const count = db.prepare('SELECT count(*) FROM events WHERE session_id = ?').pluck().get(id) as number;
  db.close();
  return count;
}

describe('a damaged key in the sessions row is CORRUPT, never absence', () => {
  const calls: [string, (store: SessionStore, id: string) => Promise<unknown>][] = [
    ['has', (store, id) => store.has(id)],
    ['load', (store, id) => store.load(id)],
    ['load with tail cut', (store, id) => store.load(id, { tail: 'cut' })],
    ['read', (store, id) => drain(store.read(id))],
    ['append', (store, id) => store.append(id, events(3, 1))],
    ['update', (store, id) => store.update(id, { title: 'lost?' })],
    ['delete', (store, id) => store.delete(id)],
    ['create', (store, id) => store.create({ id })],
  ];

  it.each(calls)('%s answers CORRUPT at the sessions row and changes nothing', async (_, call) => {
    const path = await twoSessions();
    damageKey(path, 'sessions', 'bravo-session'); // the row now says cravo-session; its events remain
    const store = await openSqliteStore({ path });
    const error = await rejectsWith(call(store, 'bravo-session'), 'CORRUPT');
    expect(error.sessionId).toBe('bravo-session');
    expect(error.location).toEqual({ file: path, table: 'sessions', row: 'id=bravo-session' });
    expect(error.message).toMatch(/verify/);
    // The acknowledged events are still there for repair (a delete rolls back), the sound session
    // is whole, and an id that truly does not exist still gets the answer for absence.
    expect(storedEvents(path, 'bravo-session')).toBe(3);
    expect((await store.load('alpha-session')).events).toHaveLength(3);
    const absent = await call(store, 'nobody').then(
      (value) => value,
      (e: { code?: string }) => e.code,
    );
    expect(absent).not.toBe('CORRUPT');
    await store.close();
    expect((await verifySqliteStore(path)).ok).toBe(false);
  });
});

describe('events without their sessions row', () => {
  it('a reserved id whose first batch would land on orphaned events is CORRUPT, not CONFLICT', async () => {
    const { store, path } = await freshStore();
    await store.create({ id: 'ghost' });
    // Another connection leaves event rows with no sessions row (as a damaged key does).
    const db = new Database(path);
    db.pragma('foreign_keys = OFF');
    db.prepare(
      `INSERT INTO events (session_id, seq, type, time, data, crc) VALUES ('ghost', 0, 't', 'x', '0', 0)`,
    ).run();
    db.close();
    const error = await rejectsWith(store.append('ghost', events(0, 2)), 'CORRUPT');
    expect(error.location).toMatchObject({ table: 'sessions', row: 'id=ghost' });
    expect(storedEvents(path, 'ghost')).toBe(1);
    await store.close();
  });
});

describe('damage inside a list index only', () => {
  // list trusts its indexes (it never checks them against the table: that would cost a scan per
  // page); the README says so, and that verify finds the damage.
  it('list leaves the session out while has/load see it, and verify reports the index', async () => {
    const path = await twoSessions();
    damageKey(path, 'sessions_by_updated', 'bravo-session');
    const store = await openSqliteStore({ path });
    expect((await store.list()).sessions.map((s) => s.id)).toEqual(['alpha-session']);
    expect(await store.has('bravo-session')).toBe(true);
    expect((await store.load('bravo-session')).events).toHaveLength(3);
    await store.close();
    const report = await verifySqliteStore(path);
    expect(report.ok).toBe(false);
    expect(report.problems).toContainEqual(
      expect.objectContaining({
        kind: 'integrity',
        message: expect.stringMatching(/index sessions_by_updated/),
      }),
    );
  });
});

/** The tags of a stream's events in order, run together: `[['old', 1000], ['new', 800]]`. */
function tagRuns(seen: readonly SessionEvent[]): [string, number][] {
  const runs: [string, number][] = [];
  for (const event of seen) {
    const tag = (event.data as { tag: string }).tag;
    const run = runs.at(-1);
    if (run !== undefined && run[0] === tag) run[1]++;
    else runs.push([tag, 1]);
  }
  return runs;
}

describe('read while another connection rewrites the log', () => {
  const P = READ_PAGE_SIZE;

  /** Two store instances on one file (as two processes): `reader` streams, `other` writes. */
  async function pair(options: Partial<SqliteStoreOptions> = {}) {
    const path = join(tempDir(), 'store.db');
    const other = await openSqliteStore({ path });
    const reader = await openSqliteStore({ ...options, path });
    return { reader, other };
  }

  /** Streams `id`, calling `atPageEnd` once after the reader has taken the first page. */
  async function readAround(reader: SessionStore, id: string, atPageEnd: () => Promise<unknown>) {
    const seen: SessionEvent[] = [];
    for await (const event of reader.read(id)) {
      seen.push(event);
      if (seen.length === P) await atPageEnd();
    }
    return seen;
  }

  it('a delete mid-stream ends the stream there (README), it does not reject with NOT_FOUND', async () => {
    const { reader, other } = await pair();
    await other.create({ id: 's' });
    await other.append('s', events(0, 2 * P + 500, 2 * P + 500, 'old'));
    const seen = await readAround(reader, 's', () => other.delete('s'));
    expect(tagRuns(seen)).toEqual([['old', P]]);
    await reader.close();
    await other.close();
  });

  it('a delete and re-create of the id mid-stream ends the stream: old and new logs are never spliced', async () => {
    const { reader, other } = await pair();
    await other.create({ id: 's' });
    await other.append('s', events(0, 2 * P + 500, 2 * P + 500, 'old'));
    const seen = await readAround(reader, 's', async () => {
      await other.delete('s');
      await other.create({ id: 's' });
      await other.append('s', events(0, P + 800, P + 800, 'new'));
    });
    expect(tagRuns(seen)).toEqual([['old', P]]);
    expect(tagRuns((await other.load('s')).events)).toEqual([['new', P + 800]]);
    await reader.close();
    await other.close();
  });

  it('a tail cut below the reader followed by new appends ends the stream: no old prefix with a new tail', async () => {
    const { reader, other } = await pair();
    await other.create({ id: 's' });
    // Committed through P / 2 - 1; the rest is an interrupted tail.
    await other.append('s', [...events(0, P / 2, P / 2, 'old'), ...events(P / 2, 2 * P, 0, 'old')]);
    const seen = await readAround(reader, 's', async () => {
      expect((await other.load('s', { tail: 'cut' })).recovered?.cutEvents).toBe(2 * P);
      await other.append('s', events(P / 2, P + 500, P + 500, 'new'));
    });
    expect(tagRuns(seen)).toEqual([['old', P]]);
    await reader.close();
    await other.close();
  });

  it('a tail cut and new appends committed between two statements of read are no false CORRUPT', async () => {
    let other: SessionStore | undefined;
    let armed = false;
    const { reader, other: writer } = await pair({
      // Only times the other connection's commit (as another process may); throws nothing.
      beforeStorageStep(step) {
        if (armed && step === 'SELECT sessions') {
          armed = false;
          void other!.append('s', events(P, 500, 500, 'new')); // runs synchronously
        }
      },
    });
    other = writer;
    await other.create({ id: 's' });
    await other.append('s', [...events(0, P, P, 'old'), ...events(P, P + 500, 0, 'old')]); // tail P..
    const seen = await readAround(reader, 's', async () => {
      await other!.load('s', { tail: 'cut' }); // the log is 0..P-1 now
      armed = true;
    });
    expect(armed).toBe(false);
    expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: P + 500 }, (_, i) => i));
    expect(tagRuns(seen)).toEqual([
      ['old', P],
      ['new', 500],
    ]);
    await reader.close();
    await other.close();
  });
});

describe('opening while another process holds the locks', () => {
  it('a BUSY migration COMMIT whose ROLLBACK also failed is retried from outside the transaction', async () => {
    const path = join(tempDir(), 'store.db');
    let busy = true;
    let rollback = true;
    const store = await openSqliteStore({
      path,
      busyTimeoutMs: 2000,
      beforeStorageStep(step) {
        if (step === 'COMMIT' && busy) {
          busy = false;
          throw Object.assign(new Error('database is locked'), { name: 'SqliteError', code: 'SQLITE_BUSY' });
        }
        if (step === 'ROLLBACK' && rollback) {
          rollback = false;
          throw Object.assign(new Error('disk I/O error'), { name: 'SqliteError', code: 'SQLITE_IOERR' });
        }
      },
    });
    expect(busy).toBe(false); // the fault was met
    await store.create({ id: 's' });
    expect(await store.append('s', events(0, 1, 1))).toEqual({ nextSeq: 1 });
    await store.close();
    expect((await verifySqliteStore(path)).ok).toBe(true);
  });
});
