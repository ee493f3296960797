// SQLite-specific behaviour beyond the shared contract: what lands in which table, paging,
// quarantine, corruption found in rows, and the collision path of append.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore, READ_PAGE_SIZE } from '../src/index.js';
import { connectionOf } from '../src/store.js';
import { events, freshStore, rejectsWith, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

function raw(path: string): Database.Database {
  return new Database(path);
}

describe('storage layout', () => {
  it('writes the header row with the first batch, in the same transaction', async () => {
    const { store, path } = await freshStore();
    await store.create({ id: 's', cwd: '/w', parent: { id: 'p', seq: 3 }, title: 'T', tags: ['x'] });
    const db = raw(path);
    expect(db.prepare('SELECT count(*) FROM sessions').pluck().get()).toBe(0);
    await store.append('s', events(0, 2, 2));
    expect(db.prepare('SELECT * FROM sessions').get()).toMatchObject({
      id: 's',
      cwd: '/w',
      parent_id: 'p',
      parent_seq: 3,
      event_count: 2,
      committed_seq: 1,
      interrupted: 0,
      title: 'T',
      tags: '["x"]',
      format_version: 1,
    });
    expect(db.prepare('SELECT seq, type, data FROM events ORDER BY seq').all()).toEqual([
      { seq: 0, type: 'tool/call', data: '{"tag":"e","seq":0,"text":"event 0"}' },
      { seq: 1, type: 'turn/end', data: '{"tag":"e","seq":1,"text":"event 1"}' },
    ]);
    db.close();
    await store.close();
  });

  it('uses WAL, synchronous FULL by default and NORMAL when relaxed, and a 0600 file', async () => {
    const { statSync } = await import('node:fs');
    const strict = await freshStore();
    expect((statSync(strict.path).mode & 0o777).toString(8)).toBe('600');
    const db = raw(strict.path);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
    await strict.store.close();
    // `synchronous` is a per-connection setting that another connection cannot observe; here we
    // check that a relaxed store's commits survive close and reopen (close checkpoints the WAL).
    const relaxed = await freshStore({ durability: 'relaxed' });
    await relaxed.store.create({ id: 'r' });
    await relaxed.store.append('r', events(0, 3, 2)); // a boundary batch commits with synchronous=FULL
    await relaxed.store.append('r', events(3, 1));
    await relaxed.store.close();
    const reopened = await openSqliteStore({ path: relaxed.path });
    expect((await reopened.load('r')).events).toHaveLength(4);
    await reopened.close();
  });

  it('keeps updatedAt strictly increasing per session even within one millisecond', async () => {
    const { store } = await freshStore();
    await store.create({ id: 's' });
    const seen: string[] = [];
    for (let i = 0; i < 20; i++) {
      await store.append('s', events(i, 1));
      seen.push((await store.load('s')).summary.updatedAt);
      await store.update('s', { title: `t${i}` });
      seen.push((await store.load('s')).summary.updatedAt);
    }
    for (let i = 1; i < seen.length; i++) expect(seen[i]! > seen[i - 1]!).toBe(true);
    await store.close();
  });
});

describe('pragmas of the store connection', () => {
  it('keeps synchronous=FULL in strict mode and NORMAL in relaxed mode, also after boundary batches', async () => {
    for (const [durability, expected] of [
      ['strict', 2],
      ['relaxed', 1],
    ] as const) {
      const { store } = await freshStore({ durability });
      const db = connectionOf.get(store)!;
      expect(db.pragma('synchronous', { simple: true })).toBe(expected);
      expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      await store.create({ id: 's' });
      await store.append('s', events(0, 2, 2));
      await store.append('s', events(2, 1));
      expect(db.pragma('synchronous', { simple: true })).toBe(expected);
      await store.close();
    }
  });

  it('refuses a misspelt option before it touches any file', async () => {
    const path = join(tempDir(), 'store.db');
    const typo = await rejectsWith(openSqliteStore({ path, busyTimeout: 100 } as never), 'INVALID');
    expect(typo.message).toContain(
      'openSqliteStore: unknown option "busyTimeout" (known options: path, busyTimeoutMs,',
    );
    expect(existsSync(path)).toBe(false);
    // `file` for `path`: the unknown name is the first thing said, not only that path is missing.
    const other = await rejectsWith(openSqliteStore({ file: path } as never), 'INVALID');
    expect(other.message).toContain('unknown option "file"');
    expect(existsSync(path)).toBe(false);
  });

  it('applies busyTimeoutMs and maxPageCount', async () => {
    const { store } = await freshStore({ busyTimeoutMs: 1234, maxPageCount: 99_999 });
    const db = connectionOf.get(store)!;
    expect(db.pragma('busy_timeout', { simple: true })).toBe(1234);
    expect(db.pragma('max_page_count', { simple: true })).toBe(99_999);
    await store.close();
  });
});

describe('read', () => {
  it('pages through more than one page and sees appends made between pages', async () => {
    const { store } = await freshStore();
    await store.create({ id: 's' });
    const total = READ_PAGE_SIZE * 2 + 7;
    await store.append('s', events(0, total));
    const seen: number[] = [];
    for await (const event of store.read('s', { fromSeq: 3 })) {
      seen.push(event.seq);
      // Another call in the middle of the stream is not blocked by it.
      if (event.seq === 10) expect(await store.has('s')).toBe(true);
      if (event.seq === 20) await store.update('s', { title: 'during read' });
    }
    expect(seen).toEqual(Array.from({ length: total - 3 }, (_, i) => i + 3));
    await store.close();
  });

  it('ends quietly when a tail cut shrinks the log mid-stream', async () => {
    const { store } = await freshStore();
    await store.create({ id: 's' });
    await store.append('s', events(0, READ_PAGE_SIZE + 10, READ_PAGE_SIZE / 2));
    const seen: number[] = [];
    for await (const event of store.read('s')) {
      seen.push(event.seq);
      if (event.seq === 0) await store.load('s', { tail: 'cut' });
    }
    expect(seen).toEqual(Array.from({ length: READ_PAGE_SIZE }, (_, i) => i));
    await store.close();
  });
});

describe('tail cut', () => {
  it('moves tail rows to the quarantine table instead of deleting them', async () => {
    const { store, path } = await freshStore();
    await store.create({ id: 's' });
    await store.append('s', events(0, 7, 3)); // boundaries at 2 and 5; tail is seq 6
    const loaded = await store.load('s', { tail: 'cut' });
    expect(loaded.recovered).toEqual({
      cutEvents: 1,
      quarantinedAt: `sqlite:${path}#quarantine/session_id=s`,
    });
    expect(loaded.events).toHaveLength(6);
    const db = raw(path);
    expect(db.prepare('SELECT session_id, seq, type, data, reason FROM quarantine').all()).toEqual([
      {
        session_id: 's',
        seq: 6,
        type: 'tool/call',
        data: '{"tag":"e","seq":6,"text":"event 6"}',
        reason: 'interrupted-tail',
      },
    ]);
    expect(db.prepare('SELECT event_count, committed_seq, interrupted FROM sessions').get()).toEqual({
      event_count: 6,
      committed_seq: 5,
      interrupted: 0,
    });
    db.close();
    expect((await store.load('s', { tail: 'cut' })).recovered).toBeUndefined();
    expect(await store.append('s', events(6, 1))).toEqual({ nextSeq: 7 });
    // No damage; the event appended after the cut is a new interrupted turn.
    expect((await store.verify()).problems.map((p) => [p.kind, p.seq])).toEqual([['interrupted', 6]]);
    await store.close();
  });
});

describe('append collisions', () => {
  it('turns a key collision into CONFLICT and rolls the whole batch back', async () => {
    const { store, path } = await freshStore();
    await store.create({ id: 's' });
    await store.append('s', events(0, 2));
    // A writer that ignores the lock protocol, simulated by a trigger that stores seq 3 first.
    const db = raw(path);
    db.exec(`CREATE TRIGGER sneak BEFORE INSERT ON events WHEN NEW.seq = 3 BEGIN
      INSERT INTO events VALUES (NEW.session_id, 3, 'x', 't', '1', 0); END`);
    const error = await rejectsWith(store.append('s', events(2, 3)), 'CONFLICT');
    expect(error.sessionId).toBe('s');
    db.exec('DROP TRIGGER sneak');
    db.close();
    const loaded = await store.load('s');
    expect(loaded.events).toEqual(events(0, 2));
    expect(loaded.summary.eventCount).toBe(2);
    expect(await store.append('s', events(2, 3))).toEqual({ nextSeq: 5 });
    await store.close();
  });
});

describe('damaged rows', () => {
  async function withSession(count = 5) {
    const fresh = await freshStore();
    await fresh.store.create({ id: 's', cwd: '/w' });
    await fresh.store.append('s', events(0, count, 2));
    await fresh.store.create({ id: 'other', cwd: '/w' });
    await fresh.store.append('other', events(0, 1));
    return fresh;
  }

  it('unparsable data is CORRUPT with its row for load and read, never a shorter history', async () => {
    const { store, path } = await withSession();
    const db = raw(path);
    db.prepare(`UPDATE events SET data = '{"broken' WHERE session_id = 's' AND seq = 2`).run();
    db.close();
    const error = await rejectsWith(store.load('s'), 'CORRUPT');
    expect(error.location).toMatchObject({ file: path, table: 'events', row: 'session_id=s seq=2', seq: 2 });
    const seen: number[] = [];
    await rejectsWith(
      (async () => {
        for await (const event of store.read('s')) seen.push(event.seq);
      })(),
      'CORRUPT',
    );
    expect(seen).toEqual([]); // the page holding seq 2 is rejected before any of it is yielded
    expect(await store.has('s')).toBe(true);
    expect((await store.list()).sessions.map((s) => s.id).sort()).toEqual(['other', 's']);
    const report = await store.verify();
    expect(report.sessions.map((s) => [s.sessionId, s.status, s.eventCount])).toEqual([
      ['other', 'interrupted', 1],
      ['s', 'corrupt', 2],
    ]);
    expect(report.problems.filter((p) => p.kind === 'corrupt')).toEqual([
      expect.objectContaining({
        sessionId: 's',
        seq: 2,
        row: 'session_id=s seq=2',
        message: expect.stringMatching(/checksum/),
      }),
      expect.objectContaining({
        sessionId: 's',
        seq: 2,
        table: 'events',
        message: expect.stringMatching(/not JSON/),
      }),
    ]);
    // One session checked alone finds the same.
    expect((await store.verify({ id: 's' })).problems).toHaveLength(2);
    await store.close();
  });

  it('a missing row is CORRUPT (gap inside, or lost rows at the end), and append refuses to build on it', async () => {
    const { store, path } = await withSession();
    const db = raw(path);
    db.prepare(`DELETE FROM events WHERE session_id = 's' AND seq = 1`).run();
    expect((await rejectsWith(store.load('s'), 'CORRUPT')).location).toMatchObject({ seq: 1 });
    db.prepare(`DELETE FROM events WHERE session_id = 's' AND seq >= 1`).run();
    db.close();
    expect((await rejectsWith(store.load('s'), 'CORRUPT')).location).toMatchObject({ table: 'events' });
    await rejectsWith(store.append('s', events(1, 1)), 'CORRUPT');
    await rejectsWith(store.append('s', events(5, 1)), 'CORRUPT');
    const { problems } = await store.verify({ id: 's' });
    expect(problems).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        table: 'sessions',
        message: expect.stringMatching(/counts 5 events, the log holds 1/),
      }),
    ]);
    // Another session is untouched and writable.
    expect(await store.append('other', events(1, 1))).toEqual({ nextSeq: 2 });
    await store.close();
  });

  // Guards: a summary that undercounts the log makes read reject with CORRUPT, as load does.
  it('read rejects with CORRUPT instead of streaming a silently shortened history', async () => {
    const { store, path } = await freshStore();
    await store.create({ id: 's' });
    await store.append('s', events(0, 6, 2));
    // Damage: the summary row says 4 events, the events table holds 6.
    const db = raw(path);
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

  it('a damaged summary row appears in list problems, never silently absent', async () => {
    const { store, path } = await withSession();
    const db = raw(path);
    db.prepare(`UPDATE sessions SET tags = 'not json' WHERE id = 's'`).run();
    db.close();
    for (const query of [{}, { cwd: '/w' }]) {
      const page = await store.list(query);
      expect(page.sessions.map((s) => s.id)).toEqual(['other']);
      expect(page.problems).toHaveLength(1);
      expect(page.problems[0]!.id).toBe('s');
      expect(page.problems[0]!.error.code).toBe('CORRUPT');
    }
    expect(await store.has('s')).toBe(true);
    await rejectsWith(store.load('s'), 'CORRUPT');
    expect((await store.verify({ id: 's' })).problems).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        table: 'sessions',
        row: 'id=s',
        message: expect.stringMatching(/tags/),
      }),
    ]);
    await store.close();
  });
});

describe('options', () => {
  it('rejects bad options with INVALID', async () => {
    for (const options of [
      {},
      { path: '' },
      { path: 'x.db', durability: 'sometimes' },
      { path: 'x.db', busyTimeoutMs: -1 },
      { path: 'x.db', maxPageCount: 0 },
      { path: 'x.db', boundaryTypes: 'turn/end' },
    ]) {
      await rejectsWith(openSqliteStore(options as never), 'INVALID');
    }
  });
});
