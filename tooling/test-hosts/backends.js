// The backends an adapter's behaviour tests run on: memory, JSONL, SQLite and a sealed store always, PostgreSQL
// when the local test server answers (a random schema per store). Each backend remembers the
// directories and schemas it made, so one `cleanup()` at the end of the test file removes them.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openJsonlStore } from '@tidemark/jsonl';
import { openMemoryStore } from '@tidemark/memory';
import { openPostgresStore } from '@tidemark/postgres';
import { Keyring, sealStore } from '@tidemark/sealed';
import { openSqliteStore } from '@tidemark/sqlite';
import pg from 'pg';
import { PG_URL, postgresAnswers } from './stores.js';

/** True when the PostgreSQL server answers; with CI=true a silent server is an error. */
export async function postgresAvailable() {
  if (await postgresAnswers()) return true;
  if (process.env.CI === 'true') throw new Error(`PostgreSQL does not answer at ${PG_URL}`);
  console.warn(`SKIPPING PostgreSQL: not reachable at ${PG_URL}`);
  return false;
}

async function withClient(run) {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** @param {string} prefix */
export function dropSchemas(prefix) {
  return withClient(async (client) => {
    const { rows } = await client.query('SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)', [
      prefix,
    ]);
    for (const row of rows) await client.query(`DROP SCHEMA IF EXISTS "${row.nspname}" CASCADE`);
  });
}

/** A fixed test key: the sealed backend's files are only test data. */
const TEST_KEYRING = Keyring.parse(`test:${Buffer.alloc(32, 5).toString('base64')}`);

function fileBackend(name, prefix, open) {
  const dirs = [];
  return {
    name,
    open: () => {
      const dir = mkdtempSync(join(tmpdir(), `tidemark-${prefix}-${name}-`));
      dirs.push(dir);
      return open(dir);
    },
    cleanup: async () => {
      for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresBackend(prefix) {
  const schemas = [];
  return {
    name: 'postgres',
    open: () => {
      const schema = `${prefix}_${randomBytes(6).toString('hex')}`;
      schemas.push(schema);
      return openPostgresStore({ connectionString: PG_URL, schema, poolSize: 2 });
    },
    cleanup: async () => {
      if (schemas.length === 0) return;
      await withClient(async (client) => {
        for (const schema of schemas.splice(0))
          await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      });
    },
  };
}

/** @param {string} prefix */
export async function testBackends(prefix) {
  if (!/^[a-z][a-z0-9_]*$/.test(prefix)) {
    throw new Error(
      `testBackends: prefix ${JSON.stringify(prefix)} must match /^[a-z][a-z0-9_]*$/ (it names schemas)`,
    );
  }
  const list = [
    { name: 'memory', open: () => openMemoryStore(), cleanup: async () => undefined },
    fileBackend('jsonl', prefix, (dir) => openJsonlStore({ root: dir })),
    fileBackend('sqlite', prefix, (dir) => openSqliteStore({ path: join(dir, 'sessions.db') })),
    // Every adapter must work unchanged over a sealed store (SPEC §10): its behaviour tests run
    // over one too, under a test key. The wrapper is the same over any store, so CI seals memory
    // (what sealing adds, without JSONL's cost a second time: these suites ran about a fifth
    // longer over sealed JSONL); TIDEMARK_FULL=1 seals the embedded default, JSONL.
    process.env.TIDEMARK_FULL === '1'
      ? fileBackend('sealed-jsonl', prefix, async (dir) =>
          sealStore(await openJsonlStore({ root: dir }), { keys: TEST_KEYRING }),
        )
      : {
          name: 'sealed-memory',
          open: async () => sealStore(await openMemoryStore(), { keys: TEST_KEYRING }),
          cleanup: async () => undefined,
        },
  ];
  if (await postgresAvailable()) list.push(postgresBackend(prefix));
  return list;
}
