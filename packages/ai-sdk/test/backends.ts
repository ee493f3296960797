// The backends every behaviour runs on. Each opens stores over one shared storage, so a test can
// open a second store as another server would (its own instance, its own pool or file handles).
// PostgreSQL runs against 127.0.0.1:5432 (TIDEMARK_PG_URL overrides) in a random schema; without
// a server its cases are skipped with a message, except with CI=true, where they must run.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionStore } from '@tidemark/core';
import { openJsonlStore } from '@tidemark/jsonl';
import { MemoryVolume, openMemoryStore } from '@tidemark/memory';
import { openPostgresStore } from '@tidemark/postgres';
import { Keyring, sealStore } from '@tidemark/sealed';
import { openSqliteStore } from '@tidemark/sqlite';
import pg from 'pg';

/** One storage, and a way to open any number of stores over it. */
export interface Backend {
  open(): Promise<SessionStore>;
  /** Closes every store opened and removes the storage. */
  dispose(): Promise<void>;
}

export interface BackendKind {
  name: string;
  make(): Promise<Backend>;
}

const PG_URL = process.env.TIDEMARK_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch (error) {
    if (process.env.CI === 'true')
      throw new Error(`PostgreSQL is not reachable (CI=true: it must be): ${String(error)}`);
    console.warn(`SKIPPING the PostgreSQL cases: not reachable at 127.0.0.1:5432: ${String(error)}`);
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function tracked(opener: () => Promise<SessionStore>, cleanup: () => Promise<void>): Backend {
  const opened: SessionStore[] = [];
  return {
    async open() {
      const store = await opener();
      opened.push(store);
      return store;
    },
    async dispose() {
      for (const store of opened) await store.close().catch(() => undefined);
      await cleanup();
    },
  };
}

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'tidemark-ai-sdk-'));
}

const memory: BackendKind = {
  name: 'memory',
  async make() {
    const volume = new MemoryVolume();
    return tracked(
      () => openMemoryStore({ volume }),
      async () => undefined,
    );
  },
};

const jsonl: BackendKind = {
  name: 'jsonl',
  async make() {
    const root = await tempDir();
    return tracked(
      () => openJsonlStore({ root }),
      () => rm(root, { recursive: true, force: true }),
    );
  },
};

const sqlite: BackendKind = {
  name: 'sqlite',
  async make() {
    const dir = await tempDir();
    return tracked(
      () => openSqliteStore({ path: join(dir, 'chats.db') }),
      () => rm(dir, { recursive: true, force: true }),
    );
  },
};

// The adapter unchanged over a sealed store (SPEC §10). The wrapper is the same over any store:
// CI seals memory (sealing's own cost without JSONL's a second time), TIDEMARK_FULL=1 seals JSONL,
// the embedded default.
const sealedKeys = Keyring.parse(`test:${Buffer.alloc(32, 3).toString('base64')}`);
const sealed: BackendKind =
  process.env.TIDEMARK_FULL === '1'
    ? {
        name: 'sealed-jsonl',
        async make() {
          const root = await tempDir();
          return tracked(
            async () => sealStore(await openJsonlStore({ root }), { keys: sealedKeys }),
            () => rm(root, { recursive: true, force: true }),
          );
        },
      }
    : {
        name: 'sealed-memory',
        async make() {
          const volume = new MemoryVolume();
          return tracked(
            async () => sealStore(await openMemoryStore({ volume }), { keys: sealedKeys }),
            async () => undefined,
          );
        },
      };

const postgres: BackendKind = {
  name: 'postgres',
  async make() {
    const schema = `ai_sdk_${randomBytes(6).toString('hex')}`;
    return tracked(
      () => openPostgresStore({ connectionString: PG_URL, schema, poolSize: 4 }),
      async () => {
        const admin = new pg.Client({ connectionString: PG_URL });
        await admin.connect();
        try {
          await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        } finally {
          await admin.end();
        }
      },
    );
  },
};

/** Every backend this machine can run: memory, JSONL, SQLite and a sealed store always, PostgreSQL when reachable. */
export const BACKENDS: BackendKind[] = [
  memory,
  jsonl,
  sqlite,
  sealed,
  ...((await postgresReachable()) ? [postgres] : []),
];
