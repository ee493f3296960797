// The stores the saver is tested on. Each `open` gives a fresh, empty store; `close` releases it
// and removes what it wrote. PostgreSQL runs on the local server (TIDEMARK_PG_URL, default
// postgres://root@127.0.0.1:5432/test) in a random schema; without a server its tests are skipped
// with a message, except with CI=true, where a missing server fails the run.

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

/** A store under test and how to dispose of it. */
export interface OpenedStore {
  store: SessionStore;
  /** Where a second process can open the same store (file backends). */
  address?: string;
  close(): Promise<void>;
}

/** A backend the tests run on. */
export interface Backend {
  name: 'memory' | 'jsonl' | 'sqlite' | 'postgres';
  open(): Promise<OpenedStore>;
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'tidemark-langgraph-'));
}

/** Connection string of the PostgreSQL test server. */
export const PG_URL = process.env.TIDEMARK_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

export const memory: Backend = {
  name: 'memory',
  async open() {
    const store = await openMemoryStore();
    return { store, close: () => store.close() };
  },
};

export const jsonl: Backend = {
  name: 'jsonl',
  async open() {
    const root = tempDir();
    const store = await openJsonlStore({ root });
    return {
      store,
      address: root,
      async close() {
        await store.close();
        rmSync(root, { recursive: true, force: true });
      },
    };
  },
};

export const sqlite: Backend = {
  name: 'sqlite',
  async open() {
    const dir = tempDir();
    const path = join(dir, 'store.db');
    const store = await openSqliteStore({ path });
    return {
      store,
      address: path,
      async close() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

export const postgres: Backend = {
  name: 'postgres',
  async open() {
    const schema = `lg_${randomBytes(6).toString('hex')}`;
    const store = await openPostgresStore({
      connectionString: PG_URL,
      schema,
      poolSize: 3,
      onWarning: () => undefined,
    });
    return {
      store,
      async close() {
        await store.close();
        await dropSchema(schema);
      },
    };
  },
};

/** Resolves true when the PostgreSQL test server answers; false with a message outside CI. */
export async function postgresAvailable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch (error) {
    const why = `PostgreSQL is not reachable at ${PG_URL.replace(/:[^:@/]*@/, ':***@')}: ${String(error)}`;
    if (process.env.CI === 'true') throw new Error(`${why} (CI=true: the PostgreSQL tests must run)`);
    console.warn(`SKIPPING the PostgreSQL tests of @tidemark/langgraph: ${why}`);
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}
