import { isTidemarkError, listAll, type SessionEvent } from '@tidemark/core';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../src/index.js';
import { adminPool, dropSchemas, endAdmin, PG_URL, schemaName, serverAvailable } from './server.js';

const available = await serverAvailable();
const schema = schemaName('maint');
afterAll(async () => {
  if (!available) return;
  await dropSchemas([schema]);
  await endAdmin();
});
const events = (n: number): SessionEvent[] =>
  Array.from({ length: n }, (_, i) => ({
    seq: i,
    type: i % 2 === 1 ? 'turn/end' : 'step',
    time: new Date().toISOString(),
    data: { i },
  }));

describe.skipIf(!available)('verify and repair', () => {
  it('a changed byte is CORRUPT with its row; verify finds it; repair drops it and what follows to quarantine', async () => {
    const store = await openPostgresStore({ connectionString: PG_URL, schema });
    const meta = await store.create({});
    await store.append(meta.id, events(6));
    expect((await store.verify({ id: meta.id })).sessions[0]!.status).toBe('ok');
    await adminPool().query(
      `UPDATE "${schema}".events SET data = '{"i":9}' WHERE session_id = $1 AND seq = 3`,
      [meta.id],
    );
    const error = await store.load(meta.id).catch((e: unknown) => e);
    expect(isTidemarkError(error, 'CORRUPT')).toBe(true);
    expect((error as { location: { row: string } }).location.row).toBe(`session_id=${meta.id} seq=3`);
    const report = await store.verify();
    expect(report.sessions.find((s) => s.sessionId === meta.id)?.status).toBe('corrupt');
    expect(report.problems[0]).toMatchObject({ kind: 'corrupt', seq: 3 });
    const repaired = await store.repair(meta.id, { dropCorrupt: true });
    expect(repaired).toMatchObject({ eventCount: 3, corruptEvents: 3 });
    const loaded = await store.load(meta.id);
    expect(loaded.events.map((e) => e.seq)).toEqual([0, 1, 2]);
    expect(loaded.interrupted).toBe(true);
    const quarantined = await adminPool().query(
      `SELECT seq FROM "${schema}".quarantine WHERE session_id = $1 ORDER BY seq`,
      [meta.id],
    );
    expect(quarantined.rows.map((r) => Number(r.seq))).toEqual([3, 4, 5]);
    expect(await store.repair(meta.id, { tail: 'cut' })).toMatchObject({ eventCount: 2, cutEvents: 1 });
    expect(await store.append(meta.id, events(3).slice(2))).toEqual({ nextSeq: 3 });
    await store.close();
  });

  it('a seq gap is CORRUPT naming the missing seq; events without a sessions row are CORRUPT, never absent', async () => {
    const store = await openPostgresStore({ connectionString: PG_URL, schema });
    const meta = await store.create({});
    await store.append(meta.id, events(4));
    await adminPool().query(`DELETE FROM "${schema}".events WHERE session_id = $1 AND seq = 1`, [meta.id]);
    const gap = await store.load(meta.id).catch((e: unknown) => e);
    expect(isTidemarkError(gap, 'CORRUPT')).toBe(true);
    expect((gap as { location: { seq: number } }).location.seq).toBe(1);
    await adminPool().query(`DELETE FROM "${schema}".sessions WHERE id = $1`, [meta.id]);
    for (const call of [() => store.has(meta.id), () => store.load(meta.id), () => store.delete(meta.id)]) {
      const error = await call().catch((e: unknown) => e);
      expect(isTidemarkError(error, 'CORRUPT')).toBe(true);
    }
    expect((await store.verify()).sessions.find((s) => s.sessionId === meta.id)?.status).toBe('corrupt');
    await store.close();
  });

  // Guards list paging around a damaged sessions row: it is a problem, and the cursor still moves past it.
  it('a damaged sessions row is a list problem on its page, and paging continues past it', async () => {
    const own = schemaName('maintlist');
    const store = await openPostgresStore({ connectionString: PG_URL, schema: own });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const meta = await store.create({});
        await store.append(meta.id, events(2));
        ids.push(meta.id);
      }
      const first = await store.list({ limit: 2 });
      const damaged = first.sessions[1]!.id;
      await adminPool().query(`UPDATE "${own}".sessions SET tags = 'not json' WHERE id = $1`, [damaged]);
      const page = await store.list({ limit: 2 });
      expect(page.sessions.map((s) => s.id)).toEqual([first.sessions[0]!.id]);
      expect(page.problems.map((p) => [p.id, p.error.code])).toEqual([[damaged, 'CORRUPT']]);
      expect(page.nextCursor).toBeDefined();
      const seen: string[] = [];
      for await (const entry of listAll(store, { pageSize: 2 }))
        seen.push('summary' in entry ? entry.summary.id : entry.problem.id);
      expect(seen.sort()).toEqual([...ids].sort());
    } finally {
      await store.close();
      await dropSchemas([own]);
    }
  });
});
