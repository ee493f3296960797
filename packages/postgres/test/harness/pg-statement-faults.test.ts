import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FAULT_SQLSTATE_LIST,
  FAULT_SQLSTATES,
  faultyClient,
  faultyPool,
  pgErrorFor,
} from '../../src/harness/index.js';
import {
  admin,
  createScratch,
  messageOf,
  requireOrSkip,
  type Scratch,
  serverUnavailable,
} from './fixtures/pg-server.js';

const unavailable = await serverUnavailable();
const CONNECTION_LOST = /terminat|Connection terminated|not queryable|ECONNRESET/;

// Skipped only without a server outside CI (requireOrSkip fails the suite when CI=true).
describe.skipIf(requireOrSkip(unavailable, 'a PostgreSQL server'))('statement-level faults (raw pg)', () => {
  let scratch: Scratch;
  let pool: pg.Pool;
  beforeAll(async () => {
    scratch = await createScratch();
    pool = new pg.Pool({ connectionString: scratch.roleUrl, max: 2 });
    pool.on('error', () => undefined);
  });
  afterAll(async () => {
    await pool?.end();
    await scratch?.drop();
  });

  const ids = async () =>
    (await admin<{ id: number }>(`SELECT id FROM ${scratch.table} ORDER BY id`)).map((row) => row.id);
  const clear = () => admin(`DELETE FROM ${scratch.table}`);

  it('builds errors shaped like pg DatabaseError for every SQLSTATE class', () => {
    expect(FAULT_SQLSTATE_LIST).toEqual([
      '08006',
      '57P01',
      '53300',
      '40001',
      '40P01',
      '42501',
      '42P01',
      '25006',
      '57014',
      '55P03',
    ]);
    for (const sqlstate of FAULT_SQLSTATE_LIST) {
      const error = pgErrorFor(sqlstate);
      expect(error).toBeInstanceOf(pg.DatabaseError);
      expect(error).toMatchObject({ code: sqlstate, message: FAULT_SQLSTATES[sqlstate].message });
    }
  });

  it('counts every statement of pool.query and pool clients, with its SQL', async () => {
    const faulty = faultyPool(pool);
    await faulty.query('SELECT 1');
    const client = await faulty.connect();
    await client.query('BEGIN');
    await client.query('SELECT $1::int AS n', [2]);
    await client.query({ text: 'COMMIT' });
    client.release();
    expect(faulty.faults.statements).toBe(4);
    expect(faulty.faults.trace).toEqual(['SELECT 1', 'BEGIN', 'SELECT $1::int AS n', 'COMMIT']);
    expect(faulty.faults.injected).toBe(0);
  });

  it('fails statement N with each SQLSTATE without sending it', async () => {
    for (const sqlstate of FAULT_SQLSTATE_LIST) {
      await clear();
      const faulty = faultyPool(pool, { at: 3, fault: { kind: 'error', sqlstate } });
      const client = await faulty.connect();
      await client.query('BEGIN');
      await client.query(`INSERT INTO ${scratch.table} VALUES (1, 'first')`);
      await expect(
        client.query(`INSERT INTO ${scratch.table} VALUES (2, 'never sent')`),
      ).rejects.toMatchObject({
        code: sqlstate,
      });
      const connectionClass = FAULT_SQLSTATES[sqlstate].class === 'connection';
      if (connectionClass) {
        // A dead connection stays dead: the next statement on this client fails too.
        expect(await messageOf(client.query('COMMIT'))).toMatch(/not queryable/);
        client.release(true);
        expect(await ids()).toEqual([]);
      } else {
        // The statement was never sent: the transaction is still healthy and commits the first row.
        await client.query('COMMIT');
        client.release();
        expect(await ids()).toEqual([1]);
      }
      expect(faulty.faults.injected).toBe(1);
    }
  });

  it('persistent mode fails statement N and every later one, until lifted', async () => {
    const faulty = faultyPool(pool, {
      at: 2,
      fault: { kind: 'error', sqlstate: '40001' },
      mode: 'persistent',
    });
    await faulty.query('SELECT 1');
    await expect(faulty.query('SELECT 2')).rejects.toMatchObject({ code: '40001' });
    await expect(faulty.query('SELECT 3')).rejects.toMatchObject({ code: '40001' });
    faulty.faults.lift();
    expect((await faulty.query('SELECT 4 AS n')).rows).toEqual([{ n: 4 }]);
    expect(faulty.faults.injected).toBe(2);
  });

  it('a pool client broken by a connection-class fault and released without an error stays broken', async () => {
    const faulty = faultyPool(pool, { at: 1, fault: { kind: 'error', sqlstate: '57P01' } });
    const client = await faulty.connect();
    await expect(client.query('SELECT 1')).rejects.toMatchObject({ code: '57P01' });
    client.release();
    // pg hands the same connection out again: the wrapper still treats it as dead.
    const again = await faulty.connect();
    expect(await messageOf(again.query('SELECT 1'))).toMatch(/not queryable/);
    again.release(true);
  });

  it('terminate: statement N of a pool client meets a really ended backend; nothing of it commits', async () => {
    await clear();
    const faulty = faultyPool(pool, { at: 3, fault: { kind: 'terminate' } });
    const client = await faulty.connect();
    const clientErrors: Error[] = [];
    client.on('error', (error) => clientErrors.push(error));
    const pid = (client as unknown as { processID: number }).processID;
    await client.query('BEGIN');
    await client.query(`INSERT INTO ${scratch.table} VALUES (1, 'in the ended transaction')`);
    expect(await messageOf(client.query('COMMIT'))).toMatch(CONNECTION_LOST);
    client.release(true);
    expect(await admin('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).toEqual([]);
    expect(await ids()).toEqual([]);
    expect(faulty.faults).toMatchObject({ statements: 3, injected: 1 });
  });

  it('terminate through pool.query: the statement fails, the pool recovers', async () => {
    const faulty = faultyPool(pool, { at: 1, fault: { kind: 'terminate' } });
    expect(await messageOf(faulty.query('SELECT 1'))).toMatch(CONNECTION_LOST);
    expect((await faulty.query('SELECT 2 AS n')).rows).toEqual([{ n: 2 }]);
  });

  it('faultyClient: error and terminate on a plain pg.Client, callback form included', async () => {
    const plain = new pg.Client({ connectionString: scratch.roleUrl });
    const errors: Error[] = [];
    plain.on('error', (error) => errors.push(error));
    await plain.connect();
    const client = faultyClient(plain, { at: 2, fault: { kind: 'error', sqlstate: '42501' } });
    await client.query('SELECT 1');
    const viaCallback = await new Promise<unknown>((resolve) =>
      client.query('SELECT 2', (error) => resolve(error)),
    );
    expect(viaCallback).toMatchObject({ code: '42501' });
    client.faults.arm({ at: 3, fault: { kind: 'terminate' } });
    expect(await messageOf(client.query('SELECT 3'))).toMatch(CONNECTION_LOST);
    expect(client.faults.trace).toEqual(['SELECT 1', 'SELECT 2', 'SELECT 3']);
    await plain.end().catch(() => undefined);
  });
});
