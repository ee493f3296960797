// Inner drivers over real backends for the sealed contract and the plaintext-on-disk tests.
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ContractDriver } from '@tidemark/contract';
import type { SessionStore, StoreOptions } from '@tidemark/core';
import { openJsonlStore } from '@tidemark/jsonl';
import { openPostgresStore } from '@tidemark/postgres';
import { openSqliteStore } from '@tidemark/sqlite';
import pg from 'pg';

const dirs: string[] = [];

/** A temp directory removed by {@link removeTempDirs}. */
export function tempDir(prefix = 'tidemark-sealed-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** Every file under `dir`, recursively (the files a backend wrote). */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Removes every directory made by {@link tempDir}. */
export function removeTempDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** A driver that opens a fresh place with `openAt(place)` and reopens the same place. */
function placeDriver(
  name: string,
  fresh: () => string,
  openAt: (place: string, options: StoreOptions | undefined) => Promise<SessionStore>,
  cleanup: () => Promise<void>,
): ContractDriver {
  const placeOf = new WeakMap<SessionStore, { place: string; options: StoreOptions | undefined }>();
  const opened = async (place: string, options: StoreOptions | undefined) => {
    const store = await openAt(place, options);
    placeOf.set(store, { place, options });
    return store;
  };
  return {
    name,
    open: (options) => opened(fresh(), options),
    async reopen(store, options) {
      const found = placeOf.get(store);
      if (found === undefined) throw new Error('reopen of a store this driver did not open');
      return opened(found.place, options ?? found.options);
    },
    cleanup,
  };
}

export const jsonlDriver = (): ContractDriver =>
  placeDriver(
    'jsonl',
    () => tempDir(),
    (root, options) => openJsonlStore({ ...options, root }),
    async () => removeTempDirs(),
  );

export const sqliteDriver = (): ContractDriver =>
  placeDriver(
    'sqlite',
    () => join(tempDir(), 'sealed.db'),
    (path, options) => openSqliteStore({ ...options, path }),
    async () => removeTempDirs(),
  );

/** The test server, as the postgres package's tests use it. */
export const PG_URL = process.env.TIDEMARK_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

let admin: pg.Pool | undefined;
/** A small pool outside any store. */
export function adminPool(): pg.Pool {
  if (admin === undefined) {
    admin = new pg.Pool({ connectionString: PG_URL, max: 2 });
    admin.on('error', () => undefined);
  }
  return admin;
}

/** Ends the admin pool. */
export async function endAdmin(): Promise<void> {
  const pool = admin;
  admin = undefined;
  await pool?.end();
}

/** True when the server answers (outside CI a missing server skips, with a message). */
export async function serverAvailable(): Promise<boolean> {
  try {
    await adminPool().query('SELECT 1');
    return true;
  } catch (error) {
    if (process.env.CI === 'true') throw error;
    console.warn(`SKIPPING the PostgreSQL tests: ${String(error)}`);
    return false;
  }
}

const schemas = new Set<string>();
let counter = 0;

/** A fresh schema name with `sealed` in it. */
export function sealedSchema(): string {
  const name = `sealed_core_${process.pid}_${Date.now().toString(36)}_${counter++}`;
  schemas.add(name);
  return name;
}

/** Drops every schema made by {@link sealedSchema}. */
export async function dropSchemas(): Promise<void> {
  for (const name of schemas) await adminPool().query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  schemas.clear();
}

export const postgresDriver = (): ContractDriver =>
  placeDriver(
    'postgres',
    sealedSchema,
    (schema, options) => openPostgresStore({ ...options, connectionString: PG_URL, schema, poolSize: 3 }),
    dropSchemas,
  );
