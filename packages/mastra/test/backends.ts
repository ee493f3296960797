// The backends every behaviour runs on: memory, JSONL and SQLite always, PostgreSQL when the
// local test server answers (127.0.0.1:5432, database test, a random schema per store).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionStore } from '@tidemark/core';
import { openJsonlStore } from '@tidemark/jsonl';
import { openMemoryStore } from '@tidemark/memory';
import { openPostgresStore } from '@tidemark/postgres';
import { openSqliteStore } from '@tidemark/sqlite';
import pg from 'pg';

export const PG_URL = process.env.TIDEMARK_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

/** A backend: opens fresh stores and removes what they left when the test file ends. */
export interface Backend {
  name: string;
  open(): Promise<SessionStore>;
  cleanup(): Promise<void>;
}

async function postgresAnswers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return true;
  } catch (error) {
    if (process.env.CI === 'true') throw error;
    console.warn(`SKIPPING PostgreSQL: not reachable at ${PG_URL}: ${String(error)}`);
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function fileBackend(name: string, open: (dir: string) => Promise<SessionStore>): Backend {
  const dirs: string[] = [];
  return {
    name,
    open: () => {
      const dir = mkdtempSync(join(tmpdir(), `tidemark-mastra-${name}-`));
      dirs.push(dir);
      return open(dir);
    },
    cleanup: async () => {
      for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresBackend(): Backend {
  const schemas: string[] = [];
  return {
    name: 'postgres',
    open: () => {
      const schema = `mastra_${randomBytes(6).toString('hex')}`;
      schemas.push(schema);
      return openPostgresStore({ connectionString: PG_URL, schema, poolSize: 2 });
    },
    cleanup: async () => {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        for (const schema of schemas.splice(0))
          await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}

/** Every backend available here. */
export async function backends(): Promise<Backend[]> {
  const list: Backend[] = [
    { name: 'memory', open: () => openMemoryStore(), cleanup: async () => undefined },
    fileBackend('jsonl', (dir) => openJsonlStore({ root: dir })),
    fileBackend('sqlite', (dir) => openSqliteStore({ path: join(dir, 'sessions.db') })),
  ];
  if (await postgresAnswers()) list.push(postgresBackend());
  return list;
}
