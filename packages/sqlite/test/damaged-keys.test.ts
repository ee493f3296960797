// Damage to a row's key or to an index: the session's data is still in the file, so every call
// answers CORRUPT at the damaged row (never absence, never deletion), and verify locates it.
import type { SessionStore } from '@tidemark/core';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore, WHOLE_DATABASE } from '../src/index.js';
import { damageKey, events, freshStore, rejectsWith, removeTempDirs, verifyFile } from './helpers.js';

afterEach(removeTempDirs);

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

  // Guards: every call answers a damaged sessions-row key with CORRUPT at that row, never NOT_FOUND or deletion.
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
    // verify names the session through its orphaned events, at the damaged row, read-only.
    const one = await store.verify({ id: 'bravo-session' });
    expect(one.sessions).toEqual([
      {
        sessionId: 'bravo-session',
        status: 'corrupt',
        problems: [expect.objectContaining({ kind: 'corrupt', table: 'sessions', row: 'id=bravo-session' })],
      },
    ]);
    await store.close();
    const all = await verifyFile(path);
    expect(all.sessions.find((s) => s.sessionId === 'bravo-session')?.status).toBe('corrupt');
    expect(storedEvents(path, 'bravo-session')).toBe(3);
  });
});

describe('events without their sessions row', () => {
  // Guards: a reservation's first batch over orphaned events reports the damage, not a collision.
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
  // Guards: list trusts its index (documented), while has/load and verify still see the session.
  it('list leaves the session out while has/load see it, and verify reports the index', async () => {
    const path = await twoSessions();
    damageKey(path, 'sessions_by_updated', 'bravo-session');
    const store = await openSqliteStore({ path });
    expect((await store.list()).sessions.map((s) => s.id)).toEqual(['alpha-session']);
    expect(await store.has('bravo-session')).toBe(true);
    expect((await store.load('bravo-session')).events).toHaveLength(3);
    await store.close();
    const report = await verifyFile(path);
    expect(report.problems).toContainEqual(
      expect.objectContaining({
        kind: 'corrupt',
        sessionId: WHOLE_DATABASE,
        message: expect.stringMatching(/index sessions_by_updated/),
      }),
    );
    // Both sessions are still checked (verify does not trust the list index), and are whole.
    expect(report.sessions.map((s) => [s.sessionId, s.status])).toEqual([
      ['alpha-session', 'ok'],
      ['bravo-session', 'ok'],
    ]);
  });
});
