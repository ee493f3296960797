// Group commit: appends queued behind a busy pool go to the server as one statement. These guard
// what each append may assume of it (contract §6.5): its batch is stored whole and in order, its
// own CONFLICT fails it alone, and a session another writer moved is re-read, never overwritten.
import { isTidemarkError, type SessionEvent } from '@tidemark/core';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore, type PostgresStep } from '../src/index.js';
import { adminPool, dropSchemas, endAdmin, PG_URL, schemaName, serverAvailable } from './server.js';

const available = await serverAvailable();
const schema = schemaName('group');
afterAll(async () => {
  if (!available) return;
  await dropSchemas([schema]);
  await endAdmin();
});

const events = (from: number, n: number, tag = 'x'): SessionEvent[] =>
  Array.from({ length: n }, (_, i) => ({
    seq: from + i,
    type: 'step',
    time: new Date().toISOString(),
    data: { tag, i: from + i },
  }));

/** A store whose hook counts the group statements (the append step without one session's id). */
async function countingStore(poolSize: number) {
  const seen = { groups: 0 };
  const store = await openPostgresStore({
    connectionString: PG_URL,
    schema,
    poolSize,
    beforeStatement: (step: PostgresStep, sessionId?: string) => {
      if (step === 'UPDATE sessions+INSERT events' && sessionId === undefined) seen.groups++;
    },
  });
  return { store, seen };
}

describe.skipIf(!available)('group commit', () => {
  it('sessions appending at once through a small pool share statements and keep every batch whole', async () => {
    const { store, seen } = await countingStore(2);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const meta = await store.create({});
      await store.append(meta.id, events(0, 1));
      ids.push(meta.id);
    }
    await Promise.all(
      ids.map(async (id, k) => {
        for (let round = 0; round < 6; round++) await store.append(id, events(1 + round * 3, 3, `s${k}`));
      }),
    );
    expect(seen.groups).toBeGreaterThan(0);
    for (const [k, id] of ids.entries()) {
      const loaded = await store.load(id);
      expect(loaded.events.map((e) => e.seq)).toEqual(Array.from({ length: 19 }, (_, i) => i));
      expect(loaded.events.slice(1).every((e) => (e.data as { tag: string }).tag === `s${k}`)).toBe(true);
      expect(loaded.summary.eventCount).toBe(19);
    }
    await store.close();
  });

  it("one batch's unique violation fails that append alone; the rest of its group is stored", async () => {
    const { store, seen } = await countingStore(1);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const meta = await store.create({});
      await store.append(meta.id, events(0, 1));
      ids.push(meta.id);
    }
    // A writer that bypassed next_seq took seq 1 of the second session.
    await adminPool().query(
      `INSERT INTO "${schema}".events (session_id, seq, type, time, data, checksum) VALUES ($1, 1, '"step"', 't', '{}', 0)`,
      [ids[1]],
    );
    // The first append holds the only connection; the other three queue up into one group.
    const results = await Promise.allSettled(ids.map((id) => store.append(id, events(1, 2))));
    expect(seen.groups).toBe(1);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    const failure = (results[1] as PromiseRejectedResult).reason as { sessionId?: string };
    expect(isTidemarkError(failure, 'CONFLICT')).toBe(true);
    expect(failure.sessionId).toBe(ids[1]);
    for (const id of [ids[0]!, ids[2]!, ids[3]!])
      expect((await store.load(id)).events.map((e) => e.seq)).toEqual([0, 1, 2]);
    await store.close();
  });

  it('a session another host moved is not claimed by the group, then re-read and appended', async () => {
    const { store, seen } = await countingStore(1);
    const other = await openPostgresStore({ connectionString: PG_URL, schema });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const meta = await store.create({});
      await store.append(meta.id, events(0, 1));
      ids.push(meta.id);
    }
    await other.update(ids[2]!, { title: 'moved' }); // updated_at changes: the cached head is stale
    const results = await Promise.all(ids.map((id) => store.append(id, events(1, 1))));
    expect(seen.groups).toBe(1);
    expect(results).toEqual([{ nextSeq: 2 }, { nextSeq: 2 }, { nextSeq: 2 }]);
    const moved = await other.load(ids[2]!);
    expect(moved.summary.title).toBe('moved');
    expect(moved.events.map((e) => e.seq)).toEqual([0, 1]);
    await other.close();
    await store.close();
  });
});
