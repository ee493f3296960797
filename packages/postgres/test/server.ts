// The test server: PostgreSQL on 127.0.0.1:5432 (override with TIDEMARK_PG_URL). Every test file
// works in schemas of its own with random names and drops them afterwards. Without a server the
// tests skip with a message — except with CI=true, where a missing server fails the run.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** Connection string of the test server. */
export const PG_URL = process.env.TIDEMARK_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

/** Resolves true when the server answers; false (with a message) when it does not, outside CI. */
export async function serverAvailable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch (error) {
    const why = `PostgreSQL is not reachable at ${PG_URL.replace(/:[^:@/]*@/, ':***@')}: ${String(error)}`;
    if (process.env.CI === 'true') throw new Error(`${why} (CI=true: the PostgreSQL tests must run)`);
    console.warn(
      `SKIPPING the PostgreSQL tests: ${why}. Start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`,
    );
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A fresh schema name, unique per call. */
export function schemaName(prefix = 'tm'): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

let admin: pg.Pool | undefined;

/** A small pool for test setup and checks (outside any store). */
export function adminPool(): pg.Pool {
  if (admin === undefined) {
    admin = new pg.Pool({ connectionString: PG_URL, max: 2 });
    admin.on('error', () => undefined);
  }
  return admin;
}

/** Drops schemas (and everything in them). */
export async function dropSchemas(names: Iterable<string>): Promise<void> {
  for (const name of names) await adminPool().query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
}

/** Ends the admin pool (afterAll). */
export async function endAdmin(): Promise<void> {
  const pool = admin;
  admin = undefined;
  await pool?.end();
}
