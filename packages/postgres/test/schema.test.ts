import { isTidemarkError } from '@tidemark/core';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore, POSTGRES_SCHEMA_VERSION } from '../src/index.js';
import { tableNames } from '../src/schema.js';
import { listQuery } from '../src/store.js';
import { adminPool, dropSchemas, endAdmin, PG_URL, schemaName, serverAvailable } from './server.js';

const available = await serverAvailable();
const schemas: string[] = [];
const fresh = () => {
  const name = schemaName('schema');
  schemas.push(name);
  return name;
};
afterAll(async () => {
  if (!available) return;
  await dropSchemas(schemas);
  await endAdmin();
});

describe.skipIf(!available)('schema and migrations', () => {
  it('a fresh schema is created with its version row; opening again leaves it as it is', async () => {
    const schema = fresh();
    const store = await openPostgresStore({ connectionString: PG_URL, schema });
    await store.close();
    const version = await adminPool().query(`SELECT application, version FROM "${schema}".tidemark_version`);
    expect(version.rows).toEqual([{ application: 'tidemark', version: POSTGRES_SCHEMA_VERSION }]);
    const again = await openPostgresStore({ connectionString: PG_URL, schema });
    expect(await again.has('nobody')).toBe(false);
    await again.close();
  });

  it('a misspelt option is INVALID, and no schema is created', async () => {
    const schema = fresh();
    const error = await openPostgresStore({ connectionString: PG_URL, schema, pool_size: 2 } as never).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isTidemarkError(error) && error.code).toBe('INVALID');
    expect((error as Error).message).toContain(
      'openPostgresStore: unknown option "pool_size" (known options: connectionString, pool,',
    );
    const found = await adminPool().query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    expect(found.rowCount).toBe(0);
  });

  it('four hosts opening one fresh schema at once migrate it exactly once', async () => {
    const schema = fresh();
    const stores = await Promise.all(
      [1, 2, 3, 4].map(() => openPostgresStore({ connectionString: PG_URL, schema, poolSize: 1 })),
    );
    await Promise.all(stores.map((s) => s.close()));
    const rows = await adminPool().query(`SELECT count(*)::int AS n FROM "${schema}".tidemark_version`);
    expect(rows.rows[0].n).toBe(1);
  });

  it('a newer schema version is UNSUPPORTED_FORMAT, and left untouched', async () => {
    const schema = fresh();
    await (await openPostgresStore({ connectionString: PG_URL, schema })).close();
    await adminPool().query(
      `UPDATE "${schema}".tidemark_version SET version = ${POSTGRES_SCHEMA_VERSION + 1}`,
    );
    const error = await openPostgresStore({ connectionString: PG_URL, schema }).catch((e: unknown) => e);
    expect(isTidemarkError(error, 'UNSUPPORTED_FORMAT')).toBe(true);
    const version = await adminPool().query(`SELECT version FROM "${schema}".tidemark_version`);
    expect(version.rows[0].version).toBe(POSTGRES_SCHEMA_VERSION + 1);
  });

  it('tables that are not tidemark’s are refused and never migrated', async () => {
    const schema = fresh();
    await adminPool().query(
      `CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".sessions (x int); INSERT INTO "${schema}".sessions VALUES (7)`,
    );
    const error = await openPostgresStore({ connectionString: PG_URL, schema }).catch((e: unknown) => e);
    expect(isTidemarkError(error, 'UNSUPPORTED_FORMAT')).toBe(true);
    const tables = await adminPool().query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`,
      [schema],
    );
    expect(tables.rows.map((r) => r.table_name)).toEqual(['sessions']);
    expect((await adminPool().query(`SELECT x FROM "${schema}".sessions`)).rows).toEqual([{ x: 7 }]);
  });

  it('a version table of another application is refused', async () => {
    const schema = fresh();
    await adminPool().query(
      `CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".tidemark_version (singleton boolean, application text, version int);
       INSERT INTO "${schema}".tidemark_version VALUES (true, 'someone-else', 1)`,
    );
    const error = await openPostgresStore({ connectionString: PG_URL, schema }).catch((e: unknown) => e);
    expect(isTidemarkError(error, 'UNSUPPORTED_FORMAT')).toBe(true);
  });

  it('a schema name needing quotes works: every name is quoted', async () => {
    const schema = `${fresh()} "Odd"`;
    schemas.push(schema.replace(/"/g, '""'));
    const store = await openPostgresStore({ connectionString: PG_URL, schema });
    const meta = await store.create({});
    await store.append(meta.id, [{ seq: 0, type: 'turn/end', time: new Date().toISOString(), data: null }]);
    expect((await store.load(meta.id)).events).toHaveLength(1);
    await store.close();
  });

  it('the first list page and later pages use the list indexes (EXPLAIN)', async () => {
    const schema = fresh();
    await (await openPostgresStore({ connectionString: PG_URL, schema })).close();
    const t = tableNames(schema);
    await adminPool().query(
      `INSERT INTO ${t.sessions} (id, format_version, created_at, updated_at, cwd, next_seq, committed_seq, interrupted)
       SELECT 's' || g, 1, '2026-01-01T00:00:00.000Z', to_char(timestamp '2026-01-01' + g * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
         '"/w' || (g % 20) || '"', 0, -1, false FROM generate_series(1, 20000) g;
       ANALYZE ${t.sessions}`,
    );
    const plans: string[] = [];
    for (const q of [
      { limit: 100 },
      { limit: 100, cursor: { updatedAt: '2026-01-01T03:00:00.000Z', id: 's100' } },
      { limit: 100, cwd: '/w3', cursor: { updatedAt: '2026-01-01T03:00:00.000Z', id: 's100' } },
    ]) {
      const { text, values } = listQuery(t, q);
      const plan = await adminPool().query(`EXPLAIN ${text}`, values);
      plans.push(plan.rows.map((r) => r['QUERY PLAN']).join('\n'));
    }
    expect(plans[0]).toMatch(/Index Scan using sessions_by_updated/);
    expect(plans[1]).toMatch(/Index Scan using sessions_by_updated/);
    expect(plans[1]).toMatch(/Index Cond: \(updated_at <= /);
    expect(plans[2]).toMatch(/Index Scan using sessions_by_cwd/);
    expect(plans[2]).toMatch(/Index Cond: \(\(cwd = .*updated_at <= /s);
    for (const plan of plans) expect(plan).not.toMatch(/Sort|Seq Scan/);
  });
});
