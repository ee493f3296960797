// The PostgreSQL test server of the CLI tests: 127.0.0.1:5432 (override with TIDEMARK_PG_URL),
// one schema of a random name per test, dropped afterwards. `pg` is loaded from @tidemark/postgres
// (the CLI itself never imports it). Without a server the tests skip, except with CI=true.
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';

/** Connection string of the test server. */
export const PG_URL = process.env.TIDEMARK_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

interface PgClient {
  connect(): Promise<void>;
  query(sql: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
  end(): Promise<void>;
  on(event: 'error', listener: () => void): void;
}

function pgClient(): PgClient {
  const requireFromPostgres = createRequire(
    createRequire(import.meta.url).resolve('@tidemark/postgres/package.json'),
  );
  const pg = requireFromPostgres('pg') as {
    Client: new (options: { connectionString: string; connectionTimeoutMillis?: number }) => PgClient;
  };
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  return client;
}

/** Runs `sql` on the test server with a connection of its own. */
export async function sql(text: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
  const client = pgClient();
  try {
    await client.connect();
    return (await client.query(text, values)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Undefined when the server answers, else why not (a missing server fails under CI=true). */
export async function serverMissing(): Promise<string | undefined> {
  try {
    await sql('SELECT 1');
    return undefined;
  } catch (error) {
    const why = `(PostgreSQL is not reachable at ${PG_URL.replace(/\/\/.*@/, '//***@')}: ${String(error)})`;
    if (process.env.CI === 'true') throw new Error(`${why}: with CI=true the PostgreSQL tests must run`);
    return why;
  }
}

/** A fresh schema name. */
export function schemaName(): string {
  return `cli_${randomBytes(6).toString('hex')}`;
}

/** The address of the test server with `schema`, and `extra` query parameters. */
export function pgAddress(schema: string, extra = ''): string {
  return `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}schema=${schema}${extra}`;
}

/** Drops `schema` and everything in it. */
export async function dropSchema(schema: string): Promise<void> {
  await sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}
