import pg from 'pg';

// Server-side fault actions: each runs on its own short connection (as a superuser, or a role
// allowed to do it) and returns how to undo it where that is possible.

/** Which backends {@link terminateBackends} ends; all given conditions must hold. */
export interface BackendFilter {
  pids?: readonly number[];
  user?: string;
  database?: string;
  applicationName?: string;
}

/** A fault that can be lifted. */
export interface LiftableFault {
  lift(): Promise<void>;
}

/** Runs statements on a fresh connection, then closes it. */
export async function withConnection<T>(
  connectionString: string,
  body: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client({ connectionString });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

const ident = (name: string) => pg.escapeIdentifier(name);
/** A possibly schema-qualified name (`schema.table`), each part quoted. */
const qualified = (name: string) => name.split('.').map(ident).join('.');

/**
 * Ends client backends matching `filter` with `pg_terminate_backend` (their clients get 57P01,
 * or a lost connection if idle) and waits up to `timeoutMs` for each to exit. Never ends the
 * caller's own backend. Returns the pids ended.
 */
export async function terminateBackends(
  connectionString: string,
  filter: BackendFilter,
  timeoutMs = 5000,
): Promise<number[]> {
  const given = Object.values(filter).filter((condition) => condition !== undefined);
  if (given.length === 0) throw new Error('terminateBackends needs a filter: it would end every backend');
  return withConnection(connectionString, async (client) => {
    const { rows } = await client.query<{ pid: number }>(
      // MATERIALIZED: the filter must be applied before pg_terminate_backend is called on a row
      // (SQL does not order the conditions of one WHERE).
      `WITH targets AS MATERIALIZED (
         SELECT pid FROM pg_stat_activity
          WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
            AND ($1::int[] IS NULL OR pid = ANY($1::int[]))
            AND ($2::text IS NULL OR usename = $2)
            AND ($3::text IS NULL OR datname = $3)
            AND ($4::text IS NULL OR application_name = $4))
       SELECT pid FROM targets WHERE pg_terminate_backend(pid, $5::bigint)`,
      [
        filter.pids ?? null,
        filter.user ?? null,
        filter.database ?? null,
        filter.applicationName ?? null,
        timeoutMs,
      ],
    );
    return rows.map((row) => row.pid);
  });
}

/** `REVOKE privilege ON TABLE table FROM role`; lifting grants it back. Clients then get 42501. */
export async function revokePrivilege(
  connectionString: string,
  options: { privilege: string; table: string; role: string },
): Promise<LiftableFault> {
  const privilege = options.privilege.toUpperCase();
  if (!/^(SELECT|INSERT|UPDATE|DELETE|TRUNCATE|REFERENCES|TRIGGER|ALL)$/.test(privilege))
    throw new Error(`not a table privilege: ${options.privilege}`);
  const on = `TABLE ${qualified(options.table)}`;
  await withConnection(connectionString, (c) =>
    c.query(`REVOKE ${privilege} ON ${on} FROM ${ident(options.role)}`),
  );
  return {
    lift: () =>
      withConnection(connectionString, async (c) => {
        await c.query(`GRANT ${privilege} ON ${on} TO ${ident(options.role)}`);
      }),
  };
}

/** `DROP TABLE table CASCADE` (not liftable: the data is gone). Clients then get 42P01. */
export async function dropTable(connectionString: string, table: string): Promise<void> {
  await withConnection(connectionString, (c) => c.query(`DROP TABLE ${qualified(table)} CASCADE`));
}

/**
 * `ALTER ROLE role SET name = value` for the role's new sessions (existing ones keep their value:
 * end them with {@link terminateBackends} so pools reconnect); lifting resets it.
 */
export async function setRoleSetting(
  connectionString: string,
  role: string,
  name: string,
  value: string,
): Promise<LiftableFault> {
  if (!/^[a-z_][a-z0-9_.]*$/i.test(name)) throw new Error(`not a setting name: ${name}`);
  await withConnection(connectionString, (c) =>
    c.query(`ALTER ROLE ${ident(role)} SET ${name} = ${pg.escapeLiteral(value)}`),
  );
  return {
    lift: () =>
      withConnection(connectionString, async (c) => {
        await c.query(`ALTER ROLE ${ident(role)} RESET ${name}`);
      }),
  };
}

/** Makes the role's new sessions read-only (`default_transaction_read_only`): writes get 25006. */
export function makeRoleReadOnly(connectionString: string, role: string): Promise<LiftableFault> {
  return setRoleSetting(connectionString, role, 'default_transaction_read_only', 'on');
}

/** Gives the role's new sessions a statement timeout: a longer statement gets 57014. */
export function setRoleStatementTimeout(
  connectionString: string,
  role: string,
  timeoutMs: number,
): Promise<LiftableFault> {
  return setRoleSetting(connectionString, role, 'statement_timeout', `${timeoutMs}ms`);
}

/** Gives the role's new sessions a lock timeout: waiting longer for a lock gets 55P03. */
export function setRoleLockTimeout(
  connectionString: string,
  role: string,
  timeoutMs: number,
): Promise<LiftableFault> {
  return setRoleSetting(connectionString, role, 'lock_timeout', `${timeoutMs}ms`);
}

/**
 * Holds `LOCK TABLE table IN <mode> MODE` in an open transaction on its own connection until
 * lifted: other sessions touching the table wait, then fail with 55P03 (lock_timeout) or 57014
 * (statement_timeout).
 */
export async function holdTableLock(
  connectionString: string,
  table: string,
  mode = 'ACCESS EXCLUSIVE',
): Promise<LiftableFault> {
  if (
    !/^(ACCESS SHARE|ROW SHARE|ROW EXCLUSIVE|SHARE UPDATE EXCLUSIVE|SHARE|SHARE ROW EXCLUSIVE|EXCLUSIVE|ACCESS EXCLUSIVE)$/i.test(
      mode,
    )
  )
    throw new Error(`not a lock mode: ${mode}`);
  const client = new pg.Client({ connectionString, application_name: 'tidemark-fault-lock' });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query(`LOCK TABLE ${qualified(table)} IN ${mode.toUpperCase()} MODE`);
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  return {
    async lift() {
      await client.query('ROLLBACK').catch(() => undefined);
      await client.end().catch(() => undefined);
    },
  };
}
