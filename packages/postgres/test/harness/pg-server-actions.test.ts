import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dropTable,
  holdTableLock,
  makeRoleReadOnly,
  revokePrivilege,
  setRoleLockTimeout,
  setRoleStatementTimeout,
  terminateBackends,
} from '../../src/harness/index.js';
import {
  admin,
  connectClient,
  createScratch,
  PG_URL,
  requireOrSkip,
  type Scratch,
  serverUnavailable,
  sqlstateOf,
} from './fixtures/pg-server.js';

const unavailable = await serverUnavailable();

// Skipped only without a server outside CI (requireOrSkip fails the suite when CI=true).
describe.skipIf(requireOrSkip(unavailable, 'a PostgreSQL server'))('server fault actions (raw pg)', () => {
  let scratch: Scratch;
  beforeAll(async () => {
    scratch = await createScratch();
  });
  afterAll(async () => {
    await scratch?.drop();
  });

  const asRole = async (applicationName = 'tidemark-faults-test') => {
    return connectClient({ connectionString: scratch.roleUrl, application_name: applicationName });
  };

  it('terminateBackends ends the matching backend only: its client gets 57P01', async () => {
    const victim = await asRole('tidemark-victim');
    const bystander = await asRole('tidemark-bystander');
    const sleeping = sqlstateOf(victim.query('SELECT pg_sleep(10)'));
    await waitForActive('tidemark-victim');
    const ended = await terminateBackends(PG_URL, { applicationName: 'tidemark-victim', user: scratch.role });
    expect(ended).toHaveLength(1);
    expect(await sleeping).toBe('57P01');
    expect((await bystander.query('SELECT 1 AS still')).rows).toEqual([{ still: 1 }]);
    await victim.end().catch(() => undefined);
    await bystander.end();
  });

  it('terminateBackends refuses an empty filter (it would end every backend)', async () => {
    await expect(terminateBackends(PG_URL, {})).rejects.toThrow(/needs a filter/);
  });

  it('revokePrivilege: INSERT gets 42501 until lifted', async () => {
    const client = await asRole();
    const revoked = await revokePrivilege(PG_URL, {
      privilege: 'insert',
      table: scratch.table,
      role: scratch.role,
    });
    try {
      expect(await sqlstateOf(client.query(`INSERT INTO ${scratch.table} VALUES (10, 'x')`))).toBe('42501');
    } finally {
      await revoked.lift();
    }
    await client.query(`INSERT INTO ${scratch.table} VALUES (10, 'x')`);
    await client.end();
  });

  it('makeRoleReadOnly: a new session gets 25006 on a write until lifted', async () => {
    const readOnly = await makeRoleReadOnly(PG_URL, scratch.role);
    try {
      const client = await asRole();
      expect(await sqlstateOf(client.query(`INSERT INTO ${scratch.table} VALUES (11, 'x')`))).toBe('25006');
      await client.end();
    } finally {
      await readOnly.lift();
    }
    const after = await asRole();
    await after.query(`INSERT INTO ${scratch.table} VALUES (11, 'x')`);
    await after.end();
  });

  it('holdTableLock: a session with a lock timeout gets 55P03', async () => {
    const lock = await holdTableLock(PG_URL, scratch.table);
    const client = await asRole();
    try {
      await client.query("SET lock_timeout = '150ms'");
      expect(await sqlstateOf(client.query(`SELECT * FROM ${scratch.table}`))).toBe('55P03');
    } finally {
      await lock.lift();
    }
    await client.query(`SELECT * FROM ${scratch.table}`);
    await client.end();
  });

  it('setRoleLockTimeout with a held lock: a new session gets 55P03 without setting anything', async () => {
    const timeout = await setRoleLockTimeout(PG_URL, scratch.role, 150);
    const lock = await holdTableLock(PG_URL, scratch.table);
    try {
      const client = await asRole();
      expect(await sqlstateOf(client.query(`SELECT * FROM ${scratch.table}`))).toBe('55P03');
      await client.end();
    } finally {
      await lock.lift();
      await timeout.lift();
    }
  });

  it('setRoleStatementTimeout: a long statement of a new session gets 57014', async () => {
    const timeout = await setRoleStatementTimeout(PG_URL, scratch.role, 100);
    try {
      const client = await asRole();
      expect(await sqlstateOf(client.query('SELECT pg_sleep(2)'))).toBe('57014');
      await client.end();
    } finally {
      await timeout.lift();
    }
  });

  it('dropTable: statements on it get 42P01', async () => {
    await admin(`CREATE TABLE ${scratch.schema}.doomed (id int)`);
    await admin(`GRANT SELECT ON ${scratch.schema}.doomed TO ${scratch.role}`);
    const client = await asRole();
    await client.query(`SELECT * FROM ${scratch.schema}.doomed`);
    await dropTable(PG_URL, `${scratch.schema}.doomed`);
    expect(await sqlstateOf(client.query(`SELECT * FROM ${scratch.schema}.doomed`))).toBe('42P01');
    await client.end();
  });
});

async function waitForActive(applicationName: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    const rows = await admin(
      "SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'",
      [applicationName],
    );
    if (rows.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${applicationName} never became active`);
}
