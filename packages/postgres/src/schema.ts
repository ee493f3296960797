// The schema and its migrations. Every name is schema-qualified and quoted. Freshness is decided
// with `to_regclass` (information_schema hides tables the role cannot read, which would make a
// store it may not read look fresh). Migrations run in one transaction under an advisory lock that
// re-reads the version first, so two hosts opening a fresh schema at once migrate it exactly once.
import { errors, TidemarkError } from '@tidemark/core';
import { type Connections, commitChecked, type Session } from './db.js';

/** Schema version this code writes and understands (the row of `tidemark_version`). */
export const POSTGRES_SCHEMA_VERSION = 1;

/** The `application` of tidemark's version row: a version table of another program is refused. */
export const POSTGRES_APPLICATION = 'tidemark';

/** Quotes an identifier (`"a""b"`). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The quoted, schema-qualified names of one store's tables and indexes. */
export interface TableNames {
  schema: string;
  version: string;
  sessions: string;
  events: string;
  quarantine: string;
}

/** The names of the tables of `schema` (validated: 1 to 63 characters, no NUL). */
export function tableNames(schema: string): TableNames {
  const q = quoteIdent(schema);
  return {
    schema: q,
    version: `${q}."tidemark_version"`,
    sessions: `${q}."sessions"`,
    events: `${q}."events"`,
    quarantine: `${q}."quarantine"`,
  };
}

/**
 * DDL of each version step: `migrations(t)[n]` takes a schema from version n to n + 1.
 *
 * - `sessions` holds meta and summary columns and `next_seq`, so `list` never touches events and
 *   an append advances `next_seq` with one conditional UPDATE. Ids and timestamps are `COLLATE
 *   "C"`: byte order, the order of the contract's list and cursors whatever the database locale.
 * - The list indexes match the list's ORDER BY exactly (updated_at DESC, id ASC).
 * - `events` is keyed by (session_id, seq): a second writer of the same seq collides on the key.
 *   `data` is text with a CRC-32 (`checksum`), not jsonb, which reorders keys, drops duplicates
 *   and rejects `\u0000`. Free text (type, cwd, title, first_prompt) is stored as JSON string
 *   literals: PostgreSQL text cannot hold U+0000, which the contract allows.
 * - `quarantine` keeps rows a repair or `tail: 'cut'` took out of a log.
 */
export function migrations(t: TableNames): readonly string[] {
  return [
    `
    CREATE TABLE ${t.version} (
      singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      application text    NOT NULL,
      version     integer NOT NULL
    );
    CREATE TABLE ${t.sessions} (
      id             text COLLATE "C" PRIMARY KEY,
      format_version integer NOT NULL,
      created_at     text COLLATE "C" NOT NULL,
      updated_at     text COLLATE "C" NOT NULL,
      cwd            text COLLATE "C",
      parent_id      text COLLATE "C",
      parent_seq     bigint,
      next_seq       bigint  NOT NULL CHECK (next_seq >= 0),
      committed_seq  bigint  NOT NULL CHECK (committed_seq >= -1),
      interrupted    boolean NOT NULL,
      title          text,
      first_prompt   text,
      tags           text,
      attrs          text
    );
    CREATE INDEX "sessions_by_updated" ON ${t.sessions} (updated_at DESC, id ASC);
    CREATE INDEX "sessions_by_cwd" ON ${t.sessions} (cwd, updated_at DESC, id ASC);
    CREATE TABLE ${t.events} (
      session_id text COLLATE "C" NOT NULL,
      seq        bigint  NOT NULL CHECK (seq >= 0),
      type       text    NOT NULL,
      time       text    NOT NULL,
      data       text    NOT NULL,
      checksum   integer NOT NULL,
      PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE ${t.quarantine} (
      id             bigserial PRIMARY KEY,
      session_id     text COLLATE "C" NOT NULL,
      seq            bigint,
      type           text,
      time           text,
      data           text,
      checksum       integer,
      reason         text NOT NULL,
      quarantined_at text NOT NULL
    );
    CREATE INDEX "quarantine_by_session" ON ${t.quarantine} (session_id, seq);
    `,
  ];
}

/** What {@link planMigration} decided from what the schema holds. */
export type MigrationPlan =
  | { kind: 'current' }
  | { kind: 'migrate'; from: number; to: number }
  | { kind: 'newer'; found: number }
  | { kind: 'foreign'; reason: string };

/** What a schema holds, as far as the migration decision goes. */
export interface SchemaState {
  /** The version row, or `undefined` when there is no version table. `null`: table without row. */
  versionRow: { application: string; version: number } | null | undefined;
  /** Which of sessions, events, quarantine exist. */
  tables: string[];
}

/**
 * Decides what to do with a schema (pure). No version table and none of our tables: fresh. A
 * version table of tidemark: its version decides. Anything else — our table names without a
 * version table, a version table without a row or of another application — is another program's
 * data, refused and never migrated.
 */
export function planMigration(state: SchemaState, known = POSTGRES_SCHEMA_VERSION): MigrationPlan {
  const { versionRow, tables } = state;
  if (versionRow === undefined) {
    if (tables.length > 0)
      return { kind: 'foreign', reason: `holds table ${tables.join(', ')} but no tidemark_version table` };
    return { kind: 'migrate', from: 0, to: known };
  }
  if (versionRow === null) return { kind: 'foreign', reason: 'has a tidemark_version table without its row' };
  if (versionRow.application !== POSTGRES_APPLICATION)
    return { kind: 'foreign', reason: `belongs to application ${JSON.stringify(versionRow.application)}` };
  if (versionRow.version > known) return { kind: 'newer', found: versionRow.version };
  if (versionRow.version === known) return { kind: 'current' };
  return { kind: 'migrate', from: versionRow.version, to: known };
}

async function readState(s: Session, schema: string, t: TableNames): Promise<SchemaState> {
  const found = await s.query<{
    version: string | null;
    sessions: string | null;
    events: string | null;
    quarantine: string | null;
  }>(
    'SELECT sessions',
    'SELECT to_regclass($1)::text AS version, to_regclass($2)::text AS sessions, to_regclass($3)::text AS events, to_regclass($4)::text AS quarantine',
    [t.version, t.sessions, t.events, t.quarantine],
  );
  const row = found.rows[0]!;
  const tables = (['sessions', 'events', 'quarantine'] as const).filter((name) => row[name] !== null);
  if (row.version === null) return { versionRow: undefined, tables };
  const version = await s.query<{ application: unknown; version: unknown }>(
    'SELECT sessions',
    `SELECT application, version FROM ${t.version}`,
  );
  const first = version.rows[0];
  if (version.rows.length !== 1 || first === undefined) return { versionRow: null, tables };
  if (typeof first.application !== 'string' || typeof first.version !== 'number')
    throw new TidemarkError(
      'UNSUPPORTED_FORMAT',
      `schema ${schema}: tidemark_version holds values tidemark never writes`,
    );
  return { versionRow: { application: first.application, version: first.version }, tables };
}

function refuse(plan: MigrationPlan, schema: string): never {
  if (plan.kind === 'newer') throw errors.unsupportedFormat(plan.found, POSTGRES_SCHEMA_VERSION);
  if (plan.kind === 'foreign')
    throw new TidemarkError(
      'UNSUPPORTED_FORMAT',
      `schema ${JSON.stringify(schema)} ${plan.reason}: these are not tidemark's tables; tidemark will not write into them`,
    );
  throw new Error(`unreachable: ${plan.kind}`);
}

/**
 * Brings `schema` up to {@link POSTGRES_SCHEMA_VERSION}: idempotent, safe against concurrent
 * openers (advisory transaction lock keyed by the schema name). Throws UNSUPPORTED_FORMAT for a
 * newer or foreign schema; server errors come out mapped (IO).
 */
export async function migrate(db: Connections, schema: string): Promise<void> {
  const t = tableNames(schema);
  const context = db.context(`opening schema ${JSON.stringify(schema)}`);
  const first = await db.run(context, (s) => readState(s, schema, t));
  const plan = planMigration(first);
  if (plan.kind === 'current') return;
  if (plan.kind !== 'migrate') refuse(plan, schema);
  await db.run(context, async (s) => {
    // A session-level lock taken before BEGIN: the transaction then starts after the lock is held,
    // so its catalog lookups see what another host's migration committed (a lock taken inside the
    // transaction would leave to_regclass reading a catalog cache from before the wait).
    await s.query('MIGRATE', 'SELECT pg_advisory_lock(hashtext($1))', [`tidemark:${schema}`]);
    let failure: { error: unknown } | undefined;
    try {
      await migrateLocked(s, schema, t, context.what);
    } catch (error) {
      failure = { error };
    }
    try {
      await s.query('MIGRATE', 'SELECT pg_advisory_unlock(hashtext($1))', [`tidemark:${schema}`]);
    } catch (error) {
      // A pooled client still holding the lock would block every other opener until it died.
      s.discard(error);
      failure ??= { error };
    }
    if (failure !== undefined) throw failure.error;
  });
}

async function migrateLocked(s: Session, schema: string, t: TableNames, what: string): Promise<void> {
  await s.query('BEGIN', 'BEGIN');
  try {
    // Another host may have migrated between the first look and the lock.
    const again = planMigration(await readState(s, schema, t));
    if (again.kind === 'migrate') {
      const exists = await s.query('MIGRATE', 'SELECT to_regnamespace($1) IS NOT NULL AS present', [
        t.schema,
      ]);
      if (exists.rows[0]?.present !== true) await s.query('MIGRATE', `CREATE SCHEMA ${t.schema}`);
      const steps = migrations(t);
      for (let version = again.from; version < again.to; version++) await s.query('MIGRATE', steps[version]!);
      await s.query(
        'MIGRATE',
        `INSERT INTO ${t.version} (singleton, application, version) VALUES (true, $1, $2)
           ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version`,
        [POSTGRES_APPLICATION, again.to],
      );
    } else if (again.kind !== 'current') {
      refuse(again, schema);
    }
    await commitChecked(s, what);
  } catch (error) {
    try {
      await s.query('ROLLBACK', 'ROLLBACK');
    } catch (rollbackError) {
      // The original error says more; the transaction may still be open, so never pool the client.
      s.discard(rollbackError);
    }
    throw error;
  }
}
