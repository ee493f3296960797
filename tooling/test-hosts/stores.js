// Stores that several processes can share: one JSONL root, one SQLite file, one PostgreSQL schema.
// An address is plain data, so a test can hand it to a host process, which opens the same store.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openJsonlStore } from '@tidemark/jsonl';
import { openPostgresStore } from '@tidemark/postgres';
import { openSqliteStore } from '@tidemark/sqlite';
import pg from 'pg';

/** Connection string of the PostgreSQL test server. */
export const PG_URL = process.env.TIDEMARK_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

/** @param {import('./index.js').StoreAddress} address */
export function openStoreAt(address) {
  switch (address.backend) {
    case 'jsonl':
      return openJsonlStore({ root: address.location, ...address.options });
    case 'sqlite':
      return openSqliteStore({ path: address.location, ...address.options });
    case 'postgres':
      return openPostgresStore({
        connectionString: address.location,
        schema: address.schema,
        poolSize: 4,
        ...address.options,
      });
    default:
      throw new Error(`unknown backend ${JSON.stringify(address.backend)}`);
  }
}

let pgAnswers;
/** True when the PostgreSQL test server answers (asked once per process). */
export function postgresAnswers() {
  pgAnswers ??= (async () => {
    const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return pgAnswers;
}

async function dropSchema(schema) {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

function fileBackend(name, place) {
  return {
    name,
    async create(options) {
      const dir = mkdtempSync(join(tmpdir(), `tidemark-hosts-${name}-`));
      const address = { backend: name, location: place(dir), options };
      return { address, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  };
}

const postgres = {
  name: 'postgres',
  async create(options) {
    const schema = `hosts_${randomBytes(6).toString('hex')}`;
    const address = { backend: 'postgres', location: PG_URL, schema, options };
    return { address, cleanup: () => dropSchema(schema) };
  },
};

/**
 * The backends whose store several processes can share. Without a PostgreSQL server it is left
 * out with a warning, except with CI=true, where a missing server is an error.
 */
export async function sharedBackends() {
  const list = [fileBackend('jsonl', (dir) => dir), fileBackend('sqlite', (dir) => join(dir, 'sessions.db'))];
  if (await postgresAnswers()) list.push(postgres);
  else if (process.env.CI === 'true') throw new Error(`PostgreSQL does not answer at ${PG_URL}`);
  else console.warn(`PostgreSQL does not answer at ${PG_URL}: its shared-store tests are left out`);
  return list;
}

/**
 * Two store instances over one new shared store of `backend` (as two hosts would open it), and how
 * to close both and remove what they left. JSONL instances let go of a session's writer lock right
 * after each operation (`lockIdleMs: 0`), so the two can write one session in turn.
 * @param {{ name: string, create(options?: object): Promise<{ address: unknown, cleanup(): Promise<void> }> }} backend
 */
export async function openTwoInstances(backend) {
  const shared = await backend.create(backend.name === 'jsonl' ? { lockIdleMs: 0 } : undefined);
  const [storeA, storeB] = await Promise.all([openStoreAt(shared.address), openStoreAt(shared.address)]);
  return {
    storeA,
    storeB,
    async close() {
      await Promise.all([storeA.close(), storeB.close()]);
      await shared.cleanup();
    },
  };
}
