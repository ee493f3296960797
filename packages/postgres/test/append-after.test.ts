// append(id, events, { after }): the batch is written only when the event stored at after.seq is
// `after`, and PostgreSQL checks it in the statement that writes (a condition of the claim's
// UPDATE), so another host's delete and rewrite cannot come between the check and the write. A
// claim that fails is judged on a fresh read of the head and that row: CONFLICT when the row is
// not `after` there, never a retry into a write.
import { isTidemarkError, type SessionEvent, type TidemarkError } from '@tidemark/core';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore, type PostgresStep, type PostgresStore } from '../src/index.js';
import { eventChecksum } from '../src/rows.js';
import { adminPool, dropSchemas, endAdmin, PG_URL, schemaName, serverAvailable } from './server.js';

const available = await serverAvailable();
const schema = schemaName('after');
afterAll(async () => {
  if (!available) return;
  await dropSchemas([schema]);
  await endAdmin();
});

/** `n` events from seq `from`, told apart by `tag`; times fixed, so equal calls give equal events. */
const events = (from: number, n: number, tag = 'old'): SessionEvent[] =>
  Array.from({ length: n }, (_, i) => ({
    seq: from + i,
    type: 'tool/call',
    time: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, from + i)).toISOString(),
    data: { tag, seq: from + i },
  }));

/** Resolves after `ms` milliseconds. */
const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The statements among `steps`, without the connection's checkout and settings. */
const sent = (steps: readonly PostgresStep[]) => steps.filter((s) => s !== 'connect' && s !== 'SET');

/** A store whose hook records the statements it sends and runs `state.before` (awaited) first. */
async function recordingStore(options: { poolSize?: number } = {}) {
  const steps: PostgresStep[] = [];
  const state: { before: ((step: PostgresStep) => Promise<void>) | undefined } = { before: undefined };
  const store = await openPostgresStore({
    connectionString: PG_URL,
    schema,
    ...options,
    beforeStatement: async (step) => {
      steps.push(step);
      await state.before?.(step);
    },
  });
  return { store, steps, state };
}

/** Another host: a store with its own pool on the same schema. */
const otherHost = () => openPostgresStore({ connectionString: PG_URL, schema });

/** A new session holding events 0..n-1 (tag `old`); returns its id and events. */
async function seeded(store: PostgresStore, n = 2): Promise<{ id: string; stored: SessionEvent[] }> {
  const { id } = await store.create({});
  const stored = events(0, n);
  await store.append(id, stored);
  return { id, stored };
}

/** The error an append rejected with, checked to be a TidemarkError of `code`. */
async function rejection(promise: Promise<unknown>, code: string): Promise<TidemarkError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isTidemarkError(error, code as never), `expected ${code}, got ${String(error)}`).toBe(true);
  return error as TidemarkError;
}

/** The session's sessions row, as JSON text: what a rewrite that keeps the head puts back. */
async function headRow(id: string): Promise<string> {
  const found = await adminPool().query<{ row: string }>(
    `SELECT row_to_json(s)::text AS row FROM "${schema}".sessions s WHERE id = $1`,
    [id],
  );
  return found.rows[0]!.row;
}

/**
 * Deletes session `id` and writes it again from another pool, in one transaction: the sessions
 * row exactly as `row` (same next_seq, updated_at, created_at: a head no conditional UPDATE can
 * tell from the one before, as when two writes fall in one millisecond) and `n` events tagged
 * `tag`. Only the events differ.
 */
async function rewriteKeepingHead(id: string, row: string, n: number, tag: string): Promise<void> {
  const client = await adminPool().connect();
  try {
    await client.query('BEGIN');
    // The row first, as the store's delete locks it: no append can then add events behind the
    // DELETE of the events.
    await client.query(`DELETE FROM "${schema}".sessions WHERE id = $1`, [id]);
    await client.query(`DELETE FROM "${schema}".events WHERE session_id = $1`, [id]);
    await client.query(
      `INSERT INTO "${schema}".sessions SELECT * FROM json_populate_record(NULL::"${schema}".sessions, $1::json)`,
      [row],
    );
    for (const e of events(0, n, tag)) {
      const type = JSON.stringify(e.type);
      const data = JSON.stringify(e.data);
      await client.query(
        `INSERT INTO "${schema}".events (session_id, seq, type, time, data, checksum) VALUES ($1, $2, $3, $4, $5, $6)`,
        [id, e.seq, type, e.time, data, eventChecksum(type, e.time, data)],
      );
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
}

describe.skipIf(!available)('append after the stored event', () => {
  for (const size of [1, 2]) {
    it(`writes a ${size}-event batch in one statement when the head is known, the check part of the claim`, async () => {
      const { store, steps } = await recordingStore();
      const { id, stored } = await seeded(store);
      steps.length = 0;
      expect(await store.append(id, events(2, size), { after: stored[1]! })).toEqual({ nextSeq: 2 + size });
      expect(sent(steps)).toEqual(['UPDATE sessions+INSERT events']);
      expect((await store.load(id)).events).toEqual(events(0, 2 + size));
      await store.close();
    });
  }

  it('reads the head and the event at after.seq in one statement on a host that has not seen the session', async () => {
    const { store: writer } = await recordingStore();
    const { id, stored } = await seeded(writer);
    const { store, steps } = await recordingStore();
    steps.length = 0; // what opening the store read
    expect(await store.append(id, events(2, 1), { after: stored[1]! })).toEqual({ nextSeq: 3 });
    expect(sent(steps)).toEqual(['SELECT sessions', 'UPDATE sessions+INSERT events']);
    await store.close();
    await writer.close();
  });

  it('matches a stored event whose data text differs only in key order, and claims on that text', async () => {
    const { store, steps } = await recordingStore();
    const { id, stored } = await seeded(store);
    const type = JSON.stringify(stored[1]!.type);
    const data = '{"seq":1,"tag":"old"}'; // this store writes {"tag":"old","seq":1}
    await adminPool().query(
      `UPDATE "${schema}".events SET data = $2, checksum = $3 WHERE session_id = $1 AND seq = 1`,
      [id, data, eventChecksum(type, stored[1]!.time, data)],
    );
    steps.length = 0;
    expect(await store.append(id, events(2, 2), { after: stored[1]! })).toEqual({ nextSeq: 4 });
    // The claim on this store's own text finds other text, the re-read finds the same event.
    expect(sent(steps)).toEqual([
      'UPDATE sessions+INSERT events',
      'SELECT sessions',
      'UPDATE sessions+INSERT events',
    ]);
    expect((await store.load(id)).events).toEqual(events(0, 4));
    await store.close();
  });
});

describe.skipIf(!available)('append after an event that is not the stored one', () => {
  const variants: [string, (e: SessionEvent) => SessionEvent][] = [
    ['type', (e) => ({ ...e, type: 'other/type' })],
    ['time', (e) => ({ ...e, time: '2030-01-01T00:00:00.000Z' })],
    ['data', (e) => ({ ...e, data: { tag: 'other', seq: 1 } })],
  ];
  for (const [field, change] of variants) {
    it(`is CONFLICT naming the session and seq when after has another ${field}, after one re-read; nothing is written`, async () => {
      const { store, steps } = await recordingStore();
      const { id, stored } = await seeded(store);
      const before = await store.load(id);
      steps.length = 0;
      const error = await rejection(
        store.append(id, events(2, 2), { after: change(stored[1]!) }),
        'CONFLICT',
      );
      expect(error.sessionId).toBe(id);
      expect(error.location?.seq).toBe(1);
      expect(error.message).toContain('no longer the one stored there');
      // The claim that did not hold, then the read that judged it: no attempt after that.
      expect(sent(steps)).toEqual(['UPDATE sessions+INSERT events', 'SELECT sessions']);
      const after = await store.load(id);
      expect(after.events).toEqual(stored);
      expect(after.summary).toEqual(before.summary);
      await store.close();
    });
  }

  it('is CONFLICT when after names an event past the end of the log', async () => {
    const { store } = await recordingStore();
    const { id, stored } = await seeded(store);
    const error = await rejection(store.append(id, events(3, 1), { after: events(2, 1)[0]! }), 'CONFLICT');
    expect(error.message).toContain('holds no event at seq 2');
    expect(error.location?.seq).toBe(2);
    expect((await store.load(id)).events).toEqual(stored);
    await store.close();
  });

  it('is CONFLICT for a created session with nothing stored, which stays reserved; NOT_FOUND for an unknown one', async () => {
    const { store } = await recordingStore();
    const { id } = await store.create({});
    const [first] = events(0, 1);
    await rejection(store.append(id, events(1, 1), { after: first! }), 'CONFLICT');
    expect(await store.append(id, events(0, 1))).toEqual({ nextSeq: 1 });
    await rejection(store.append('never-created', events(1, 1), { after: first! }), 'NOT_FOUND');
    await store.close();
  });
});

describe.skipIf(!available)('append after, with another host on the same schema', () => {
  it('is CONFLICT when the other host deleted the session and rewrote it to the same length; its events stay', async () => {
    const { store } = await recordingStore();
    const other = await otherHost();
    const { id, stored } = await seeded(store);
    const meta = (await store.load(id)).meta;
    await other.delete(id);
    await other.create({ id, createdAt: meta.createdAt });
    await other.append(id, events(0, 2, 'new'));
    const error = await rejection(store.append(id, events(2, 2), { after: stored[1]! }), 'CONFLICT');
    expect(error.location?.seq).toBe(1);
    expect((await other.load(id)).events).toEqual(events(0, 2, 'new'));
    await store.close();
    await other.close();
  });

  it('is CONFLICT when a rewrite kept the very same head: only the event at after.seq tells', async () => {
    const { store } = await recordingStore();
    const { id, stored } = await seeded(store);
    await rewriteKeepingHead(id, await headRow(id), 2, 'new');
    await rejection(store.append(id, events(2, 1), { after: stored[1]! }), 'CONFLICT');
    expect((await store.load(id)).events).toEqual(events(0, 2, 'new'));
    await store.close();
  });

  it('is CONFLICT when that rewrite commits right before the claim is sent (between any check and the write)', async () => {
    const { store, state } = await recordingStore();
    const { id, stored } = await seeded(store);
    const row = await headRow(id);
    let rewrites = 0;
    state.before = async (step) => {
      if (step !== 'UPDATE sessions+INSERT events' || rewrites++ > 0) return;
      await rewriteKeepingHead(id, row, 2, 'new');
    };
    await rejection(store.append(id, events(2, 1), { after: stored[1]! }), 'CONFLICT');
    expect(rewrites).toBe(1);
    expect((await store.load(id)).events).toEqual(events(0, 2, 'new'));
    await store.close();
  });

  it('never writes onto a log another pool rewrites concurrently (rounds of racing a rewrite that keeps the head)', async () => {
    const { store } = await recordingStore();
    const answers = new Map<string, number>();
    const wrong: string[] = [];
    for (let round = 0; round < 60; round++) {
      const { id, stored } = await seeded(store);
      const row = await headRow(id);
      // Which side starts first, and by how much: the append lands before the rewrite, waits for
      // the rewrite's lock on the row, or comes after it.
      const lead = (round % 6) - 2;
      const [answer] = await Promise.all([
        later(Math.max(0, lead)).then(() =>
          store.append(id, events(2, 1), { after: stored[1]! }).then(
            () => 'ok',
            (e: unknown) => (isTidemarkError(e) ? e.code : String(e)),
          ),
        ),
        later(Math.max(0, -lead)).then(() => rewriteKeepingHead(id, row, 2, 'new')),
      ]);
      answers.set(answer, (answers.get(answer) ?? 0) + 1);
      // Before the rewrite (deleted with the old log by it) or CONFLICT: the log is the rewrite's.
      const log = await store.load(id);
      const tags = log.events.map((e) => (e.data as { tag: string }).tag);
      if (!['ok', 'CONFLICT'].includes(answer) || tags.join() !== 'new,new' || log.summary.eventCount !== 2)
        wrong.push(`round ${round}: ${answer}, ${JSON.stringify(log.events.map((e) => e.data))}`);
    }
    expect(wrong, `answers ${JSON.stringify([...answers])}`).toEqual([]);
    await store.close();
  });

  it('never writes onto a log another host deletes and writes again through its store (racing rounds)', async () => {
    const { store } = await recordingStore();
    const other = await otherHost();
    const wrong: string[] = [];
    for (let round = 0; round < 30; round++) {
      const { id, stored } = await seeded(store);
      const createdAt = (await store.load(id)).meta.createdAt;
      const [answer] = await Promise.all([
        store.append(id, events(2, 1), { after: stored[1]! }).then(
          () => 'ok',
          (e: unknown) => (isTidemarkError(e) ? e.code : String(e)),
        ),
        (async () => {
          await other.delete(id);
          await other.create({ id, createdAt });
          await other.append(id, events(0, 2, 'new'));
        })(),
      ]);
      const log = await store.load(id);
      const tags = log.events.map((e) => (e.data as { tag: string }).tag);
      // ok (before the delete) or NOT_FOUND / CONFLICT: never the old batch on the new log.
      if (!['ok', 'CONFLICT', 'NOT_FOUND'].includes(answer) || tags.join() !== 'new,new')
        wrong.push(`round ${round}: ${answer}, ${tags.join()}`);
    }
    expect(wrong).toEqual([]);
    await store.close();
    await other.close();
  });
});

describe.skipIf(!available)('append after, for a retry of a stored batch', () => {
  it('succeeds without writing when after is the event before the stored batch', async () => {
    const { store, steps } = await recordingStore();
    const { id, stored } = await seeded(store);
    await store.append(id, events(2, 2), { after: stored[1]! });
    const before = await store.load(id);
    steps.length = 0;
    expect(await store.append(id, events(2, 2), { after: stored[1]! })).toEqual({ nextSeq: 4 });
    expect(sent(steps)).toEqual(['SELECT sessions', 'SELECT events']);
    expect(await store.load(id)).toEqual(before);
    await store.close();
  });

  it('is CONFLICT when after is not the event before the stored batch, even though the batch is stored', async () => {
    const { store } = await recordingStore();
    const { id, stored } = await seeded(store);
    await store.append(id, events(2, 2));
    const other = await otherHost(); // no remembered head: straight to the read of the retry
    const error = await rejection(
      other.append(id, events(2, 2), { after: { ...stored[1]!, data: { tag: 'other' } } }),
      'CONFLICT',
    );
    expect(error.location?.seq).toBe(1);
    expect((await store.load(id)).events).toEqual(events(0, 4));
    await other.close();
    await store.close();
  });
});

describe.skipIf(!available)('append after, in a group commit', () => {
  /** A store on one connection, counting the group statements it sends (`groups()`). */
  async function groupCountingStore() {
    let count = 0;
    const store = await openPostgresStore({
      connectionString: PG_URL,
      schema,
      poolSize: 1,
      beforeStatement: (step, sessionId) => {
        if (step === 'UPDATE sessions+INSERT events' && sessionId === undefined) count++;
      },
    });
    return { store, groups: () => count };
  }

  it("fails the append whose after is wrong alone; the group's other batches are stored", async () => {
    const { store, groups } = await groupCountingStore();
    const sessions = [];
    for (let i = 0; i < 4; i++) sessions.push(await seeded(store));
    const wrongOne = sessions[2]!.id;
    // The first append holds the only connection; the other three queue up into one group.
    const results = await Promise.allSettled(
      sessions.map(({ id, stored }) =>
        store.append(id, events(2, 2), {
          after: id === wrongOne ? { ...stored[1]!, time: '2030-01-01T00:00:00.000Z' } : stored[1]!,
        }),
      ),
    );
    expect(groups()).toBe(1);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const failure = (results[2] as PromiseRejectedResult).reason as TidemarkError;
    expect(isTidemarkError(failure, 'CONFLICT')).toBe(true);
    expect(failure.sessionId).toBe(wrongOne);
    for (const { id } of sessions)
      expect((await store.load(id)).events).toEqual(events(0, id === wrongOne ? 2 : 4));
    await store.close();
  });

  it('claims a grouped session only while its row at after.seq is the one judged: a rewrite that kept the head loses it', async () => {
    const { store, groups } = await groupCountingStore();
    const sessions = [];
    for (let i = 0; i < 3; i++) sessions.push(await seeded(store));
    const rewritten = sessions[1]!.id;
    await rewriteKeepingHead(rewritten, await headRow(rewritten), 2, 'new');
    const results = await Promise.allSettled(
      sessions.map(({ id, stored }) => store.append(id, events(2, 1), { after: stored[1]! })),
    );
    expect(groups()).toBe(1);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await store.load(rewritten)).events).toEqual(events(0, 2, 'new'));
    await store.close();
  });
});
