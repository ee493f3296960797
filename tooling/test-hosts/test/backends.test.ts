import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { PG_URL, type TestBackend, testBackends } from '../index.js';

const backends = await testBackends('hostskit');
afterAll(async () => {
  for (const backend of backends) await backend.cleanup();
});

function event(seq: number) {
  return { seq, type: 'user/message', time: new Date().toISOString(), data: { seq } };
}

/** Temp dirs or schemas of this file's prefix that `backend` left behind. */
async function leftovers(backend: TestBackend): Promise<string[]> {
  if (backend.name === 'memory' || backend.name === 'sealed-memory') return [];
  if (backend.name !== 'postgres') {
    return readdirSync(tmpdir()).filter((name) => name.startsWith(`tidemark-hostskit-${backend.name}-`));
  }
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ nspname: string }>(
      "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, 'hostskit_')",
    );
    return rows.map((row) => row.nspname);
  } finally {
    await client.end();
  }
}

describe('testBackends', () => {
  it('lists memory, JSONL, SQLite and a sealed store, then PostgreSQL when it answers', () => {
    const sealed = process.env.TIDEMARK_FULL === '1' ? 'sealed-jsonl' : 'sealed-memory';
    expect(backends.map((b) => b.name).slice(0, 4)).toEqual(['memory', 'jsonl', 'sqlite', sealed]);
    expect(backends.slice(4).map((b) => b.name)).toEqual(backends.length > 4 ? ['postgres'] : []);
  });

  it('the sealed backend stores sealed data and reads it back opened', async () => {
    const sealed = backends.find((b) => b.name.startsWith('sealed-'))!;
    const store = await sealed.open();
    const { id } = await store.create({});
    const written = event(0);
    await store.append(id, [written]);
    const inner = (store as unknown as { inner: typeof store }).inner;
    expect(JSON.stringify((await inner.load(id)).events[0]!.data)).toContain('tidemark:sealed');
    expect((await store.load(id)).events[0]).toEqual(written);
    await store.close();
    await sealed.cleanup();
  });

  it('rejects a prefix that cannot name a schema', async () => {
    await expect(testBackends('bad-prefix"')).rejects.toThrow(/prefix "bad-prefix\\"" must match/);
  });
});

describe.each(backends)('a $name test backend', (backend) => {
  it('opens a fresh store each time, and cleanup removes what they left', async () => {
    const first = await backend.open();
    const { id } = await first.create({});
    await first.append(id, [event(0)]);
    const second = await backend.open();
    if (!backend.name.endsWith('memory')) expect(await leftovers(backend)).toHaveLength(2);
    await expect(second.load(id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await first.load(id)).events.map((e) => e.data)).toEqual([{ seq: 0 }]);
    await first.close?.();
    await second.close?.();
    await backend.cleanup();
    expect(await leftovers(backend)).toEqual([]);
  });
});
