// Review findings: each test shows a bug that was fixed in src.
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { events, freshStore, rejectsWith, removeTempDirs } from './helpers.js';

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
