import { inspect } from 'node:util';
import { isTidemarkError, type SessionEvent } from '@tidemark/core';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { Connections } from '../src/db.js';
import { commitOutcomeOf, openPostgresStore } from '../src/index.js';
import { adminPool, dropSchemas, endAdmin, PG_URL, schemaName, serverAvailable } from './server.js';

const available = await serverAvailable();
const schemas: string[] = [];
const fresh = () => {
  const name = schemaName('dur');
  schemas.push(name);
  return name;
};
afterAll(async () => {
  if (!available) return;
  await dropSchemas(schemas);
  await endAdmin();
});
const time = () => new Date().toISOString();
const batch = (from: number, n: number): SessionEvent[] =>
  Array.from({ length: n }, (_, i) => ({
    seq: from + i,
    type: i === n - 1 ? 'turn/end' : 'x',
    time: time(),
    data: { i },
  }));

describe.skipIf(!available)('durability and connection hygiene', () => {
  it('fsync = off on the server is reported loudly at open through onWarning', async () => {
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
    const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>;
    // The server's real fsync stays on: the pool answers SHOW fsync as a server without it would.
    (pool as { connect: unknown }).connect = async () => {
      const client = await connect();
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      (client as { query: unknown }).query = (text: unknown, ...rest: unknown[]) =>
        text === 'SHOW fsync' ? Promise.resolve({ rows: [{ fsync: 'off' }] }) : query(text, ...rest);
      return client;
    };
    const warnings: string[] = [];
    const store = await openPostgresStore({ pool, schema: fresh(), onWarning: (m) => warnings.push(m) });
    expect(warnings.join('\n')).toMatch(/fsync = off/);
    await store.close();
    await pool.end();
  });

  it('no warning when fsync is on; every connection gets synchronous_commit and the timeouts', async () => {
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
    const warnings: string[] = [];
    const store = await openPostgresStore({
      pool,
      schema: fresh(),
      statementTimeoutMs: 4321,
      lockTimeoutMs: 1234,
      idleInTransactionTimeoutMs: 5678,
      onWarning: (m) => warnings.push(m),
    });
    expect(warnings).toEqual([]);
    const settings = await pool.query(
      `SELECT current_setting('synchronous_commit') AS sc, current_setting('statement_timeout') AS st,
        current_setting('lock_timeout') AS lt, current_setting('idle_in_transaction_session_timeout') AS it`,
    );
    expect(settings.rows[0]).toEqual({ sc: 'on', st: '4321ms', lt: '1234ms', it: '5678ms' });
    await store.close();
    await pool.end();
  });

  it('a COMMIT answered ROLLBACK (the transaction had failed) is an IO error, not success', async () => {
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
    const db = new Connections(
      pool,
      { statementTimeoutMs: 0, lockTimeoutMs: 0, idleInTransactionTimeoutMs: 0 },
      [],
      undefined,
      () => undefined,
    );
    const error = await db
      .transaction(db.context('testing'), async (s) => {
        // An error swallowed inside the transaction leaves it aborted; COMMIT then rolls back.
        await s.query('SELECT sessions', 'SELECT 1 / 0').catch(() => undefined);
      })
      .catch((e: unknown) => e);
    expect(isTidemarkError(error, 'IO')).toBe(true);
    expect(String((error as Error).message)).toMatch(/COMMIT answered ROLLBACK/);
    await pool.end();
  });

  it('a connection fault destroys the client; a write cut off is IO, retryable, outcome unknown, and the retry resolves it', async () => {
    const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
    let failNext = false;
    const store = await openPostgresStore({
      pool,
      schema: fresh(),
      beforeStatement: (step) => {
        if (failNext && step === 'UPDATE sessions+INSERT events') {
          failNext = false;
          throw Object.assign(new Error('Connection terminated unexpectedly'), {});
        }
      },
    });
    const meta = await store.create({});
    await store.append(meta.id, batch(0, 2));
    const before = pool.totalCount;
    failNext = true;
    const error = await store.append(meta.id, batch(2, 2)).catch((e: unknown) => e);
    expect(isTidemarkError(error, 'IO')).toBe(true);
    expect((error as { retryable: boolean }).retryable).toBe(true);
    expect(commitOutcomeOf(error)).toBe('unknown');
    expect(pool.totalCount).toBe(before - 1);
    expect(await store.append(meta.id, batch(2, 2))).toEqual({ nextSeq: 4 });
    expect((await store.load(meta.id)).events).toHaveLength(4);
    await store.close();
    await pool.end();
  });

  it('pg_terminate_backend of every store connection: retryable IO or success, never absence; the next call works', async () => {
    const warnings: string[] = [];
    const app = schemaName('app');
    const store = await openPostgresStore({
      connectionString: `${PG_URL}?application_name=${app}`,
      schema: fresh(),
      poolSize: 2,
      onWarning: (m) => warnings.push(m),
    });
    const meta = await store.create({});
    await store.append(meta.id, batch(0, 2));
    await adminPool().query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
      [app],
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const outcome = await store.has(meta.id).catch((e: unknown) => e);
    if (outcome !== true) {
      expect(isTidemarkError(outcome, 'IO')).toBe(true);
      expect((outcome as { retryable: boolean }).retryable).toBe(true);
    }
    expect(await store.has(meta.id)).toBe(true);
    await store.close();
  });

  it('permission and missing-table errors are IO and not retryable, never NOT_FOUND; a read-only server refuses writes as IO', async () => {
    const schema = fresh();
    const store = await openPostgresStore({ connectionString: PG_URL, schema });
    const meta = await store.create({});
    await store.append(meta.id, batch(0, 1));
    const readOnly = await openPostgresStore({
      connectionString: `${PG_URL}?options=-c%20default_transaction_read_only%3Don`,
      schema,
    });
    const refused = await readOnly.append(meta.id, batch(1, 1)).catch((e: unknown) => e);
    expect(isTidemarkError(refused, 'IO')).toBe(true);
    expect((refused as { errno: string }).errno).toBe('25006');
    expect((refused as { retryable: boolean }).retryable).toBe(false);
    expect(await readOnly.has(meta.id)).toBe(true);
    await readOnly.close();
    await adminPool().query(`DROP TABLE "${schema}".events`);
    for (const call of [
      () => store.load(meta.id),
      () => store.has(meta.id),
      () => store.append(meta.id, batch(1, 1)),
    ]) {
      const error = await call().catch((e: unknown) => e);
      expect(isTidemarkError(error, 'IO')).toBe(true);
      expect((error as { errno: string }).errno).toBe('42P01');
      expect((error as { retryable: boolean }).retryable).toBe(false);
    }
    await store.close();
  });

  it('the password never appears in an error, a warning or inspect output of the store', async () => {
    const secret = 'Sup3r-s3cret-pw';
    const warnings: string[] = [];
    const url = PG_URL.replace('://root@', `://root:${secret}@`);
    const store = await openPostgresStore({
      connectionString: url,
      schema: fresh(),
      onWarning: (m) => warnings.push(m),
    });
    expect(inspect(store, { depth: 10, showHidden: true })).not.toContain(secret);
    await store.close();
    for (const bad of [url.replace(':5432/', ':1/'), url.replace(/\/[^/]*$/, '/no_such_database_tm')]) {
      const error = await openPostgresStore({
        connectionString: bad,
        onWarning: (m) => warnings.push(m),
      }).catch((e: unknown) => e);
      expect(isTidemarkError(error, 'IO')).toBe(true);
      expect(inspect(error, { depth: 10 })).not.toContain(secret);
      expect(JSON.stringify(error)).not.toContain(secret);
    }
    expect(warnings.join('\n')).not.toContain(secret);
  });
  // Guards: a client whose COMMIT failed before reaching the server (transaction still open) is
  // destroyed, not pooled, so later appends do not run inside that transaction and vanish.
  it('a COMMIT rejected before it was sent does not leave its transaction open for the next call', async () => {
    const schema = fresh();
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
    const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>;
    let failCommit = false;
    (pool as { connect: unknown }).connect = async () => {
      const client = await connect();
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      (client as { query: unknown }).query = (text: unknown, ...rest: unknown[]) => {
        if (failCommit && text === 'COMMIT') {
          failCommit = false;
          return Promise.reject(Object.assign(new Error('permission denied'), { code: '42501' }));
        }
        return query(text, ...rest);
      };
      return client;
    };
    const store = await openPostgresStore({ pool, schema });
    await store.create({ id: 's1', title: 'before' });
    await store.append('s1', batch(0, 2));
    failCommit = true;
    await expect(store.update('s1', { title: 'after' })).rejects.toMatchObject({ code: 'IO' });
    await store.append('s1', batch(2, 2));
    await store.close();
    await pool.end();
    const other = await openPostgresStore({ connectionString: PG_URL, schema });
    try {
      expect((await other.load('s1')).events.map((e) => e.seq)).toEqual([0, 1, 2, 3]);
      expect((await other.list()).sessions[0]?.title).toBe('before');
    } finally {
      await other.close();
    }
  });
  // Guards: a migration whose statements and unlock failed (the connection still alive) destroys
  // its client, so the session-level advisory lock does not stay held by a pooled client and
  // block every other opener of the schema.
  it('a failed migration whose unlock failed too does not leave the advisory lock held in the pool', async () => {
    const schema = fresh();
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
    const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>;
    const wrapped = new WeakSet<pg.PoolClient>();
    let locked = false;
    (pool as { connect: unknown }).connect = async () => {
      const client = await connect();
      if (wrapped.has(client)) return client;
      wrapped.add(client);
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      (client as { query: unknown }).query = (text: unknown, ...rest: unknown[]) => {
        if (locked) return Promise.reject(Object.assign(new Error('permission denied'), { code: '42501' }));
        if (typeof text === 'string' && text.includes('pg_advisory_lock')) locked = true;
        return query(text, ...rest);
      };
      return client;
    };
    await expect(openPostgresStore({ pool, schema })).rejects.toMatchObject({ code: 'IO' });
    locked = false;
    try {
      const other = await openPostgresStore({ connectionString: PG_URL, schema, lockTimeoutMs: 2000 });
      await other.close();
    } finally {
      await pool.end();
    }
  });
});
