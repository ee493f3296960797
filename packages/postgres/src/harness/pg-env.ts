// What every PostgreSQL cell shares: the server, how the store is opened, scratch schemas and
// roles, and the workload-then-verify run with the invariants of runner.ts.
import { randomBytes } from 'node:crypto';
import type { SessionStore } from '@tidemark/core';
import type { ReportBuilder } from '@tidemark/faults';
import {
  Checker,
  reopenAndVerify,
  runWorkload,
  WorkloadModel,
  type WorkloadRunOptions,
} from '@tidemark/faults';
import pg from 'pg';
import { withConnection } from './server-actions.js';

/** Options the harness passes to the store's factory (a subset of `openPostgresStore`'s). */
export interface PostgresOpenOptions {
  connectionString?: string;
  pool?: pg.Pool;
  schema: string;
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
  onWarning?: (message: string) => void;
}

/** Opens a PostgreSQL store (default: `openPostgresStore` of `@tidemark/postgres`). */
export type PostgresOpener = (options: PostgresOpenOptions) => Promise<SessionStore>;

/** The shared context of the PostgreSQL cells. */
export interface PgEnv {
  /** Report row backend name. */
  backend: string;
  /** A superuser connection string. */
  url: string;
  open: PostgresOpener;
  quick: boolean;
  report: ReportBuilder;
  progress?: (phase: string, done: number, total: number) => void;
}

/** Warnings are expected under faults (idle clients losing their connection): kept quiet. */
const quiet = () => undefined;

/** A fresh schema name; nothing is created until a store opens on it. */
export function scratchSchema(): string {
  return `tidemark_fh_${randomBytes(5).toString('hex')}`;
}

/** Drops a scratch schema and everything in it (best effort: cleanup must not hide a result). */
export async function dropSchema(url: string, schema: string): Promise<void> {
  await withConnection(url, (c) =>
    c.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`),
  ).catch(() => undefined);
}

/** Empties a migrated schema's tables, so that a run can reuse it instead of migrating anew. */
export async function emptySchema(url: string, schema: string): Promise<void> {
  const t = (name: string) => `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(name)}`;
  await withConnection(url, (c) => c.query(`TRUNCATE ${t('sessions')}, ${t('events')}, ${t('quarantine')}`));
}

/** A migrated schema that quick runs share (emptied before each); undefined when runs make their own. */
export async function sharedSchema(env: PgEnv): Promise<string | undefined> {
  if (!env.quick) return undefined;
  const schema = scratchSchema();
  const store = await openDirect(env, schema);
  await store.close();
  return schema;
}

/** Opens the store straight on the server (no proxy, no statement faults). */
export function openDirect(env: PgEnv, schema: string, url = env.url): Promise<SessionStore> {
  return env.open({ connectionString: url, schema, onWarning: quiet });
}

/** Opens the store over a pool of the harness's own (statement faults, the proxy). */
export function openOnPool(
  env: PgEnv,
  schema: string,
  pool: pg.Pool,
  extra: Partial<PostgresOpenOptions> = {},
): Promise<SessionStore> {
  return env.open({ ...extra, pool, schema, onWarning: quiet });
}

/** A pool whose idle-client errors do not crash the process (the store listens on its clients). */
export function harnessPool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool({ max: 4, ...config });
  pool.on('error', quiet);
  return pool;
}

/** Reopens the store directly after the fault was lifted and checks contract §7.4's invariants. */
export async function reopenAndVerifyPg(
  env: PgEnv,
  schema: string,
  model: WorkloadModel,
  check: Checker,
  url = env.url,
): Promise<void> {
  await reopenAndVerify(() => openDirect(env, schema, url), model, check, false);
}

/** One run: the agent workload on a faulted store, then the fault lifted and the store verified. */
export async function workloadThenVerify(
  env: PgEnv,
  schema: string,
  open: () => Promise<SessionStore>,
  options: WorkloadRunOptions,
  lift: () => Promise<void> | void,
): Promise<{ check: Checker; model: WorkloadModel }> {
  const model = new WorkloadModel();
  const check = new Checker();
  const opened = await check.attempt('open', open);
  if (opened.ok) {
    await runWorkload(opened.value, model, check, options);
    await check.attempt('close', () => opened.value.close());
  }
  await lift();
  await reopenAndVerifyPg(env, schema, model, check);
  return { check, model };
}

/** A login role with the privileges a store needs on an existing schema (tables made by a superuser). */
export interface ScratchRole {
  role: string;
  url: string;
  drop(): Promise<void>;
}

/** Creates a login role that may use `schema`'s tables (not own them: a revoke then bites). */
export async function scratchRole(url: string, schema: string): Promise<ScratchRole> {
  const role = `tidemark_fh_${randomBytes(5).toString('hex')}`;
  const password = randomBytes(9).toString('hex');
  const s = pg.escapeIdentifier(schema);
  const r = pg.escapeIdentifier(role);
  await withConnection(url, async (c) => {
    await c.query(`CREATE ROLE ${r} LOGIN PASSWORD ${pg.escapeLiteral(password)}`);
    await c.query(`GRANT USAGE ON SCHEMA ${s} TO ${r}`);
    await c.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${s} TO ${r}`);
    await c.query(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA ${s} TO ${r}`);
  });
  const roleUrl = new URL(url);
  roleUrl.username = role;
  roleUrl.password = password;
  return {
    role,
    url: roleUrl.toString(),
    async drop() {
      await withConnection(url, async (c) => {
        await c.query(
          'SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE usename = $1 AND pid <> pg_backend_pid()',
          [role],
        );
        await c.query(`DROP OWNED BY ${r}`);
        await c.query(`DROP ROLE ${r}`);
      }).catch(() => undefined);
    },
  };
}

/** Why the server at `url` cannot be used, or undefined when it can. */
export async function serverUnreachable(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', quiet);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return `${url.replace(/:[^:@/]*@/, ':***@')}: ${(error as Error).message}`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Re-export for cells that only need the options type of a run. */
export type { WorkloadRunOptions };
