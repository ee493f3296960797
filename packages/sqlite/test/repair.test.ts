// store.repair(): row-level repair of one session, destroying nothing (everything removed is in the
// quarantine table), and a refusal naming what to do when the file's pages are damaged.
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore, WHOLE_DATABASE } from '../src/index.js';
import {
  assertInvariants,
  damageKey,
  events,
  expectNoDamage,
  freshStore,
  rejectsWith,
  removeTempDirs,
  verifyFile,
} from './helpers.js';

afterEach(removeTempDirs);

/** Sessions `s` (8 events, boundaries at 2 and 5) and `ok` (2 events), then `damage` in SQL. */
async function damaged(damage: string) {
  const { store, path } = await freshStore();
  await store.create({ id: 's' });
  await store.append('s', events(0, 8, 3));
  await store.create({ id: 'ok' });
  await store.append('ok', events(0, 2, 2));
  await store.close();
  const db = new Database(path);
  db.exec(damage);
  db.close();
  return { path, store: await openSqliteStore({ path }) };
}

function quarantineRows(path: string): unknown[] {
  const db = new Database(path, { readonly: true });
  const rows = db.prepare('SELECT session_id, seq, data, reason FROM quarantine ORDER BY id').all();
  db.close();
  return rows;
}

describe('store.repair with dropCorrupt', () => {
  it('cuts a log back to its sound prefix, keeping the rest in quarantine', async () => {
    const { path, store } = await damaged(
      `UPDATE events SET data = 'garbage' WHERE session_id = 's' AND seq = 4`,
    );
    const address = `sqlite:${path}#quarantine/session_id=s`;
    const report = await store.repair('s', { dropCorrupt: true });
    expect(report).toEqual({
      sessionId: 's',
      eventCount: 4,
      corruptEvents: 4,
      removed: [
        expect.objectContaining({
          kind: 'corrupt',
          sessionId: 's',
          seq: 4,
          table: 'events',
          quarantinedAt: address,
        }),
      ],
      quarantined: [address],
    });
    expect(quarantineRows(path)).toEqual([
      { session_id: 's', seq: 4, data: 'garbage', reason: 'repair' },
      { session_id: 's', seq: 5, data: '{"tag":"e","seq":5,"text":"event 5"}', reason: 'repair' },
      { session_id: 's', seq: 6, data: '{"tag":"e","seq":6,"text":"event 6"}', reason: 'repair' },
      { session_id: 's', seq: 7, data: '{"tag":"e","seq":7,"text":"event 7"}', reason: 'repair' },
    ]);
    const loaded = await store.load('s');
    expect(loaded.events).toEqual(events(0, 4, 3));
    expect(loaded.committedSeq).toBe(2);
    expect(loaded.interrupted).toBe(true);
    await assertInvariants(store, 's', events(0, 4, 3));
    expect((await store.load('ok')).events).toEqual(events(0, 2, 2));
    await store.close();
    await expectNoDamage(path);
  });

  it('handles a gap, and a second repair finds nothing to remove', async () => {
    const { path, store } = await damaged(`DELETE FROM events WHERE session_id = 's' AND seq = 1`);
    const before = await store.verify({ id: 's' });
    expect(before.problems.map((p) => [p.table, p.seq])).toEqual([
      ['events', 1],
      ['sessions', undefined],
    ]);
    const report = await store.repair('s', { dropCorrupt: true });
    expect([report.eventCount, report.corruptEvents]).toEqual([1, 6]);
    const again = await store.repair('s', { dropCorrupt: true });
    expect(again).toEqual({ sessionId: 's', eventCount: 1, removed: [], quarantined: [] });
    await store.close();
    await expectNoDamage(path);
  });

  it('sets an unreadable tags column aside in quarantine', async () => {
    const { path, store } = await damaged(`UPDATE sessions SET tags = '[1' WHERE id = 'ok'`);
    const report = await store.repair('ok', { dropCorrupt: true });
    expect(report).toMatchObject({ eventCount: 2, summarySetAside: true });
    expect(report.corruptEvents).toBeUndefined();
    expect(report.removed).toEqual([expect.objectContaining({ table: 'sessions', row: 'id=ok' })]);
    expect(quarantineRows(path)).toEqual([
      { session_id: 'ok', seq: null, data: '{"tags":"[1","attrs":null}', reason: 'repair-summary' },
    ]);
    await store.close();
    await expectNoDamage(path);
  });

  it('repairs only the session named; another stays damaged and reported', async () => {
    const { path, store } = await damaged(
      `UPDATE events SET data = 'garbage' WHERE session_id = 's' AND seq = 4;
       UPDATE events SET crc = crc + 1 WHERE session_id = 'ok' AND seq = 1`,
    );
    expect((await store.repair('ok', { dropCorrupt: true })).corruptEvents).toBe(1);
    expect((await store.load('ok')).events).toEqual(events(0, 1, 2));
    await store.close();
    const after = await verifyFile(path);
    const damage = after.problems.filter((p) => p.kind === 'corrupt');
    expect(new Set(damage.map((p) => p.sessionId))).toEqual(new Set(['s']));
  });

  // Guards: many findings in one session never keep another session from being repaired.
  it("repairs a session even when another session's damage is far larger", async () => {
    const { store, path } = await freshStore();
    await store.create({ id: 'noisy' });
    await store.append('noisy', events(0, 1100));
    await store.create({ id: 'quiet' });
    await store.append('quiet', events(0, 3, 3));
    await store.close();
    const db = new Database(path);
    db.exec(`UPDATE events SET crc = crc + 1 WHERE session_id = 'noisy' AND seq > 0;
             UPDATE events SET crc = crc + 1 WHERE session_id = 'quiet' AND seq = 1`);
    db.close();
    const reopened = await openSqliteStore({ path });
    expect((await reopened.repair('quiet', { dropCorrupt: true })).corruptEvents).toBe(2);
    expect((await reopened.load('quiet')).events).toEqual(events(0, 1, 3));
    await reopened.close();
  });

  it('with tail cut too, also moves the interrupted tail of the sound prefix', async () => {
    const { path, store } = await damaged(
      `UPDATE events SET data = 'garbage' WHERE session_id = 's' AND seq = 4`,
    );
    const report = await store.repair('s', { dropCorrupt: true, tail: 'cut' });
    expect(report).toMatchObject({ eventCount: 3, corruptEvents: 4, cutEvents: 1 });
    expect(report.removed.map((p) => [p.kind, p.seq])).toEqual([
      ['corrupt', 4],
      ['interrupted', 3],
    ]);
    expect(report.quarantined).toEqual([`sqlite:${path}#quarantine/session_id=s`]);
    await store.close();
  });
});

describe('store.repair without dropCorrupt', () => {
  // Guards: a corrupt session is only cut with explicit consent; without it nothing is removed.
  it('rejects a corrupt session with CORRUPT and removes nothing', async () => {
    const { path, store } = await damaged(
      `UPDATE events SET data = 'garbage' WHERE session_id = 's' AND seq = 4`,
    );
    await rejectsWith(store.repair('s'), 'CORRUPT');
    expect(quarantineRows(path)).toEqual([]);
    await store.close();
  });

  it('moves the interrupted tail with tail cut, and reports nothing for a sound session', async () => {
    const { path, store } = await damaged('SELECT 1');
    expect(await store.repair('s')).toEqual({ sessionId: 's', eventCount: 8, removed: [], quarantined: [] });
    const report = await store.repair('s', { tail: 'cut' });
    expect(report).toMatchObject({ eventCount: 6, cutEvents: 2 });
    expect(report.removed).toEqual([
      expect.objectContaining({
        kind: 'interrupted',
        seq: 6,
        quarantinedAt: `sqlite:${path}#quarantine/session_id=s`,
      }),
    ]);
    expect((await store.verify({ id: 's' })).sessions[0]?.status).toBe('ok');
    await rejectsWith(store.repair('nobody'), 'NOT_FOUND');
    await store.close();
  });
});

describe('store.repair over damaged pages', () => {
  // Guards: a row repair never runs over b-tree damage; the error says what to do instead.
  it('refuses with CORRUPT naming a backup or .recover, and changes nothing', async () => {
    const { store, path } = await damaged(
      `UPDATE events SET data = 'garbage' WHERE session_id = 's' AND seq = 4`,
    );
    await store.close();
    damageKey(path, 'sessions_by_updated', 'ok');
    const reopened = await openSqliteStore({ path });
    const verified = await reopened.verify();
    expect(verified.problems.some((p) => p.sessionId === WHOLE_DATABASE)).toBe(true);
    const error = await rejectsWith(reopened.repair('s', { dropCorrupt: true }), 'CORRUPT');
    expect(error.message).toMatch(/restore a backup, or salvage with sqlite3 \.recover and import/);
    expect(error.location).toMatchObject({ file: path });
    expect(quarantineRows(path)).toEqual([]);
    await reopened.close();
  });
});
