// append(id, events, { after }): the store writes the batch only when the event stored at after.seq
// is `after`, and SQLite checks it inside the append's own write transaction (under the batch's
// savepoint in a group commit), so no other connection can delete or rewrite the session between
// the check and the COMMIT.
import { join } from 'node:path';
import { isTidemarkError, type SessionEvent } from '@tidemark/core';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore, type SqliteStore } from '../src/index.js';
import { eventChecksum } from '../src/rows.js';
import { events, rejectsWith, removeTempDirs, tempDir } from './helpers.js';

afterEach(removeTempDirs);

/**
 * A store whose step hook records each step as `step id` (`steps`) and by name alone (`names`),
 * and runs `state.during` before it.
 */
async function recordingStore(path = join(tempDir(), 'store.db')) {
  const steps: string[] = [];
  const names: string[] = [];
  const state: { during: ((step: string) => void) | undefined } = { during: undefined };
  const store = await openSqliteStore({
    path,
    beforeStorageStep(step, id) {
      steps.push(id === undefined ? step : `${step} ${id}`);
      names.push(step);
      state.during?.(step);
    },
  });
  const clear = () => {
    steps.length = 0;
    names.length = 0;
  };
  return { store, path, steps, names, clear, state };
}

/** Creates `id` with events 0..count-1 stored; returns them. */
async function seeded(store: SqliteStore, id: string, count = 2, tag = 'e'): Promise<SessionEvent[]> {
  const stored = events(0, count, 0, tag);
  await store.create({ id });
  await store.append(id, stored);
  return stored;
}

describe('append after the stored event', () => {
  it('writes the batch when the event at after.seq is after, read with the head inside the write transaction', async () => {
    const { store, names, clear } = await recordingStore();
    const stored = await seeded(store, 's');
    clear();
    expect(await store.append('s', events(2, 2), { after: stored[1]! })).toEqual({ nextSeq: 4 });
    expect(names).toEqual([
      'BEGIN IMMEDIATE',
      'SELECT sessions', // the head, and the event at after.seq in the same statement
      'UPDATE sessions',
      'INSERT events',
      'INSERT events',
      'COMMIT',
    ]);
    expect((await store.load('s')).events).toEqual(events(0, 4));
    await store.close();
  });

  it('matches a stored event whose data text differs from after only in key order and spacing', async () => {
    const { store, path } = await recordingStore();
    const stored = await seeded(store, 's');
    // Another writer's serialization of the same event: not the text this store writes.
    const raw = new Database(path);
    const data = '{ "text": "event 1", "seq": 1, "tag": "e" }';
    raw
      .prepare("UPDATE events SET data = ?, crc = ? WHERE session_id = 's' AND seq = 1")
      .run(data, eventChecksum(stored[1]!.type, stored[1]!.time, data));
    raw.close();
    expect(await store.append('s', events(2, 1), { after: stored[1]! })).toEqual({ nextSeq: 3 });
    await store.close();
  });

  it('is CORRUPT, as a read of it is, when the row at after.seq has the right text but a bad checksum', async () => {
    const { store, path } = await recordingStore();
    const stored = await seeded(store, 's');
    const raw = new Database(path);
    raw.prepare("UPDATE events SET crc = crc + 1 WHERE session_id = 's' AND seq = 1").run();
    raw.close();
    const error = await rejectsWith(store.append('s', events(2, 1), { after: stored[1]! }), 'CORRUPT');
    expect(error.location?.seq).toBe(1);
    await store.close();
  });
});

describe('append after an event that is not the stored one', () => {
  const variants: [string, (e: SessionEvent) => SessionEvent][] = [
    ['type', (e) => ({ ...e, type: 'other/type' })],
    ['time', (e) => ({ ...e, time: '2030-01-01T00:00:00.000Z' })],
    ['data', (e) => ({ ...e, data: { tag: 'e', seq: 1, text: 'another text' } })],
  ];
  for (const [field, change] of variants) {
    it(`is CONFLICT naming the session and seq when after has another ${field}; nothing is written`, async () => {
      const { store, names, clear } = await recordingStore();
      const stored = await seeded(store, 's');
      clear();
      const error = await rejectsWith(
        store.append('s', events(2, 2), { after: change(stored[1]!) }),
        'CONFLICT',
      );
      expect(error.sessionId).toBe('s');
      expect(error.location?.seq).toBe(1);
      expect(error.message).toContain('no longer the one stored there');
      expect(names).not.toContain('INSERT events');
      expect(names.at(-1)).toBe('ROLLBACK');
      const loaded = await store.load('s');
      expect(loaded.events).toEqual(stored);
      expect(loaded.summary.eventCount).toBe(2);
      await store.close();
    });
  }

  it('is CONFLICT when after names an event past the end of the log', async () => {
    const { store } = await recordingStore();
    const stored = await seeded(store, 's');
    const after = events(2, 1)[0]!;
    const error = await rejectsWith(store.append('s', events(3, 1), { after }), 'CONFLICT');
    expect(error.message).toContain('holds no event at seq 2');
    expect(error.location?.seq).toBe(2);
    expect((await store.load('s')).events).toEqual(stored);
    await store.close();
  });

  it('is CONFLICT for a created session with nothing stored yet, which stays pending; NOT_FOUND for an unknown one', async () => {
    const { store } = await recordingStore();
    await store.create({ id: 'pending' });
    const [after] = events(0, 1);
    await rejectsWith(store.append('pending', events(1, 1), { after: after! }), 'CONFLICT');
    // The reservation is kept: the first batch still materializes the session.
    expect(await store.append('pending', events(0, 1))).toEqual({ nextSeq: 1 });
    await rejectsWith(store.append('ghost', events(1, 1), { after: after! }), 'NOT_FOUND');
    await store.close();
  });
});

describe('append after, with another connection on the same file', () => {
  async function pair() {
    const path = join(tempDir(), 'store.db');
    const first = await recordingStore(path);
    const other = await openSqliteStore({ path });
    return { ...first, other };
  }

  it('is CONFLICT when the other deleted the session and rewrote it to the same length; its events stay', async () => {
    const { store, other } = await pair();
    const old = await seeded(store, 's', 2, 'old');
    await other.delete('s');
    const rewritten = await seeded(other, 's', 2, 'new');
    // The first store's view ends at old[1]: the next seq (2) is still right, the log is not.
    const error = await rejectsWith(
      store.append('s', events(2, 2, 0, 'old'), { after: old[1]! }),
      'CONFLICT',
    );
    expect(error.location?.seq).toBe(1);
    expect((await other.load('s')).events).toEqual(rewritten);
    expect((await store.load('s')).events).toEqual(rewritten);
    await store.close();
    await other.close();
  });

  it('takes the append when the rewrite stored the same event at after.seq', async () => {
    const { store, other } = await pair();
    const old = await seeded(store, 's');
    await other.delete('s');
    await seeded(other, 's');
    expect(await store.append('s', events(2, 1), { after: old[1]! })).toEqual({ nextSeq: 3 });
    expect((await other.load('s')).events).toEqual(events(0, 3));
    await store.close();
    await other.close();
  });

  it('holds the write lock from the check to the COMMIT: another connection cannot write in between', async () => {
    const { store, path, state } = await pair();
    const old = await seeded(store, 's');
    const raw = new Database(path, { timeout: 0 });
    const refused: string[] = [];
    state.during = (step) => {
      // The head read, which also reads the event at after.seq: the check is made under the lock.
      if (step !== 'SELECT sessions') return;
      try {
        raw.prepare("DELETE FROM events WHERE session_id = 's'").run();
      } catch (error) {
        refused.push((error as { code: string }).code);
      }
    };
    expect(await store.append('s', events(2, 1), { after: old[1]! })).toEqual({ nextSeq: 3 });
    expect(refused).toEqual(['SQLITE_BUSY']);
    raw.close();
    state.during = undefined;
    expect((await store.load('s')).events).toEqual(events(0, 3));
    await store.close();
  });
});

describe('append after, for a retry of a stored batch', () => {
  it('succeeds without writing when after is the event before the stored batch', async () => {
    const { store, names, clear } = await recordingStore();
    const stored = await seeded(store, 's');
    await store.append('s', events(2, 2), { after: stored[1]! });
    clear();
    expect(await store.append('s', events(2, 2), { after: stored[1]! })).toEqual({ nextSeq: 4 });
    // The head with the event at after.seq, then the stored batch compared: nothing written.
    expect(names).toEqual(['BEGIN IMMEDIATE', 'SELECT sessions', 'SELECT events', 'COMMIT']);
    expect((await store.load('s')).events).toEqual(events(0, 4));
    await store.close();
  });

  it('is CONFLICT when after is not the event before the stored batch, even though the batch is stored', async () => {
    const { store } = await recordingStore();
    const stored = await seeded(store, 's');
    await store.append('s', events(2, 2));
    const wrong = { ...stored[1]!, data: { other: true } };
    const error = await rejectsWith(store.append('s', events(2, 2), { after: wrong }), 'CONFLICT');
    expect(error.location?.seq).toBe(1);
    expect((await store.load('s')).events).toEqual(events(0, 4));
    await store.close();
  });
});

describe('append after, in a group commit', () => {
  it("fails the append whose after is wrong alone; the group's other batches commit", async () => {
    const { store, steps, clear } = await recordingStore();
    const ids = ['a', 'b', 'c', 'd'];
    const last = new Map<string, SessionEvent>();
    for (const id of ids) last.set(id, (await seeded(store, id)).at(-1)!);
    clear();
    const outcomes = await Promise.allSettled(
      ids.map((id) =>
        store.append(id, events(2, 2), {
          after: id === 'c' ? { ...last.get(id)!, type: 'rewritten' } : last.get(id)!,
        }),
      ),
    );
    expect(steps.filter((s) => s.startsWith('BEGIN IMMEDIATE'))).toHaveLength(1);
    expect(steps.filter((s) => s.startsWith('SAVEPOINT'))).toHaveLength(4);
    expect(steps.filter((s) => s === 'ROLLBACK TO c')).toHaveLength(1);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const failure = (outcomes[2] as PromiseRejectedResult).reason;
    expect(isTidemarkError(failure, 'CONFLICT')).toBe(true);
    expect((failure as { sessionId?: string }).sessionId).toBe('c');
    for (const id of ['a', 'b', 'd']) expect((await store.load(id)).events).toEqual(events(0, 4));
    expect((await store.load('c')).events).toEqual(events(0, 2));
    await store.close();
  });

  it('fails an append whose after is past the end alone, and takes a retry with after in the same group', async () => {
    const { store } = await recordingStore();
    const a = await seeded(store, 'a');
    const b = await seeded(store, 'b');
    await store.append('b', events(2, 1));
    const [ahead, retry] = await Promise.allSettled([
      store.append('a', events(3, 1), { after: events(2, 1)[0]! }),
      store.append('b', events(2, 1), { after: b[1]! }),
    ]);
    expect(ahead.status).toBe('rejected');
    expect(isTidemarkError((ahead as PromiseRejectedResult).reason, 'CONFLICT')).toBe(true);
    expect(retry).toEqual({ status: 'fulfilled', value: { nextSeq: 3 } });
    expect((await store.load('a')).events).toEqual(a);
    await store.close();
  });
});
