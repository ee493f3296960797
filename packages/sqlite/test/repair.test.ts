import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore, repairSqliteStore, verifySqliteStore } from '../src/index.js';
import { assertInvariants, events, freshStore, removeTempDirs } from './helpers.js';

afterEach(removeTempDirs);

async function damaged(damage: string) {
  const { store, path } = await freshStore();
  await store.create({ id: 's' });
  await store.append('s', events(0, 8, 3)); // boundaries at 2 and 5
  await store.create({ id: 'ok' });
  await store.append('ok', events(0, 2, 2));
  await store.close();
  const db = new Database(path);
  db.exec(damage);
  db.close();
  return path;
}

describe('repairSqliteStore', () => {
  it('cuts a log back to its sound prefix, keeping the rest in quarantine', async () => {
    const path = await damaged(`UPDATE events SET data = 'garbage' WHERE session_id = 's' AND seq = 4`);
    const report = await repairSqliteStore(path);
    expect(report.repaired).toEqual([
      { sessionId: 's', keptEvents: 4, quarantinedEvents: 4, quarantinedSummary: false },
    ]);
    expect(report.unrepairable).toEqual([]);
    expect(report.after.ok).toBe(true);
    const db = new Database(path, { readonly: true });
    expect(db.prepare(`SELECT seq, data, reason FROM quarantine ORDER BY seq`).all()).toEqual([
      { seq: 4, data: 'garbage', reason: 'repair' },
      { seq: 5, data: '{"tag":"e","seq":5,"text":"event 5"}', reason: 'repair' },
      { seq: 6, data: '{"tag":"e","seq":6,"text":"event 6"}', reason: 'repair' },
      { seq: 7, data: '{"tag":"e","seq":7,"text":"event 7"}', reason: 'repair' },
    ]);
    db.close();
    const store = await openSqliteStore({ path });
    const loaded = await store.load('s');
    expect(loaded.events).toEqual(events(0, 4, 3));
    expect(loaded.committedSeq).toBe(2);
    expect(loaded.interrupted).toBe(true);
    await assertInvariants(store, 's', events(0, 4, 3));
    expect((await store.load('ok')).events).toEqual(events(0, 2, 2));
    await store.close();
  });

  it('handles a gap, and leaves a sound store untouched', async () => {
    const path = await damaged(`DELETE FROM events WHERE session_id = 's' AND seq = 1`);
    expect((await verifySqliteStore(path)).problems.map((p) => p.kind).sort()).toEqual([
      'count-mismatch',
      'seq-gap',
    ]);
    const report = await repairSqliteStore(path);
    expect(report.repaired).toEqual([
      { sessionId: 's', keptEvents: 1, quarantinedEvents: 6, quarantinedSummary: false },
    ]);
    expect(report.after.ok).toBe(true);
    const again = await repairSqliteStore(path);
    expect(again.repaired).toEqual([]);
    expect(again.after.ok).toBe(true);
  });

  it('sets an unreadable tags column aside in quarantine', async () => {
    const path = await damaged(`UPDATE sessions SET tags = '[1' WHERE id = 'ok'`);
    const report = await repairSqliteStore(path);
    expect(report.repaired).toEqual([
      { sessionId: 'ok', keptEvents: 2, quarantinedEvents: 0, quarantinedSummary: true },
    ]);
    expect(report.after.ok).toBe(true);
    const db = new Database(path, { readonly: true });
    expect(db.prepare(`SELECT session_id, data, reason FROM quarantine`).all()).toEqual([
      { session_id: 'ok', data: '{"tags":"[1","attrs":null}', reason: 'repair-summary' },
    ]);
    db.close();
  });

  it('repairs only the sessions it is asked to, and reports the others as still damaged', async () => {
    const path = await damaged(
      `UPDATE events SET data = 'garbage' WHERE session_id = 's' AND seq = 4;
       UPDATE events SET crc = crc + 1 WHERE session_id = 'ok' AND seq = 1`,
    );
    const report = await repairSqliteStore(path, { sessions: ['ok'] });
    expect(report.repaired).toEqual([
      { sessionId: 'ok', keptEvents: 1, quarantinedEvents: 1, quarantinedSummary: false },
    ]);
    expect(report.after.ok).toBe(false);
    expect(new Set(report.after.problems.map((p) => p.sessionId))).toEqual(new Set(['s']));
    const store = await openSqliteStore({ path });
    expect((await store.load('ok')).events).toEqual(events(0, 1, 2));
    await store.close();
  });

  it("repairs a named session even when another session's damage fills verify's findings", async () => {
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
    const report = await repairSqliteStore(path, { sessions: ['quiet'] });
    expect(report.repaired).toEqual([
      { sessionId: 'quiet', keptEvents: 1, quarantinedEvents: 2, quarantinedSummary: false },
    ]);
    const reopened = await openSqliteStore({ path });
    expect((await reopened.load('quiet')).events).toEqual(events(0, 1, 3));
    await reopened.close();
  });
});
