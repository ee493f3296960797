// Server-side faults done to a live store by an administrator: REVOKE, DROP TABLE, a read-only
// role, a held lock meeting the store's lock_timeout or statement_timeout. The store runs as an
// ordinary role on tables a superuser made; the probe (probe.ts) checks typed errors and no
// absence under the fault, and once it is lifted the store is reopened and verified.
import { Checker, probeStore, runWorkload, WorkloadModel } from '@tidemark/faults';
import {
  dropSchema,
  openDirect,
  type PgEnv,
  type PostgresOpenOptions,
  reopenAndVerifyPg,
  scratchRole,
  scratchSchema,
} from './pg-env.js';
import {
  dropTable,
  holdTableLock,
  makeRoleReadOnly,
  revokePrivilege,
  terminateBackends,
} from './server-actions.js';

interface Inflicted {
  /** The data is gone (DROP TABLE): typed errors are the answer; absence is still a violation. */
  destructive: boolean;
  storeOptions?: Partial<PostgresOpenOptions>;
  release?: () => Promise<void>;
}

interface ActionCase {
  name: string;
  inflict(target: { url: string; schema: string; role: string }): Promise<Inflicted>;
}

const table = (schema: string, name: string) => `${schema}.${name}`;

/** The cases; each names the SQLSTATE the store meets. */
const PG_ACTION_CASES: readonly ActionCase[] = [
  {
    name: 'pg: REVOKE INSERT ON events (42501)',
    async inflict({ url, schema, role }) {
      const fault = await revokePrivilege(url, { privilege: 'INSERT', table: table(schema, 'events'), role });
      return { destructive: false, release: () => fault.lift() };
    },
  },
  {
    name: 'pg: REVOKE SELECT ON events (42501)',
    async inflict({ url, schema, role }) {
      const fault = await revokePrivilege(url, { privilege: 'SELECT', table: table(schema, 'events'), role });
      return { destructive: false, release: () => fault.lift() };
    },
  },
  {
    name: 'pg: REVOKE ALL ON sessions (42501)',
    async inflict({ url, schema, role }) {
      const fault = await revokePrivilege(url, { privilege: 'ALL', table: table(schema, 'sessions'), role });
      return { destructive: false, release: () => fault.lift() };
    },
  },
  {
    name: 'pg: read-only role (25006)',
    async inflict({ url, role }) {
      const fault = await makeRoleReadOnly(url, role);
      await terminateBackends(url, { user: role });
      return {
        destructive: false,
        async release() {
          await fault.lift();
          await terminateBackends(url, { user: role });
        },
      };
    },
  },
  {
    name: 'pg: lock timeout, events locked (55P03)',
    async inflict({ url, schema }) {
      const lock = await holdTableLock(url, table(schema, 'events'));
      return { destructive: false, storeOptions: { lockTimeoutMs: 150 }, release: () => lock.lift() };
    },
  },
  {
    // The store sets statement_timeout on each of its connections, overriding a role default, so
    // the timeout is the store's option; the held lock makes statements outlast it.
    name: 'pg: statement timeout, sessions locked (57014)',
    async inflict({ url, schema }) {
      const lock = await holdTableLock(url, table(schema, 'sessions'));
      return {
        destructive: false,
        storeOptions: { statementTimeoutMs: 200, lockTimeoutMs: 0 },
        release: () => lock.lift(),
      };
    },
  },
  {
    // Not liftable: the events are gone. The store must say IO (42P01), never absence or an empty
    // history, and a reopened store must do the same: it does not recreate a missing table.
    name: 'pg: DROP TABLE events (42P01)',
    async inflict({ url, schema }) {
      await dropTable(url, table(schema, 'events'));
      return { destructive: true };
    },
  },
  {
    name: 'pg: DROP TABLE sessions (42P01)',
    async inflict({ url, schema }) {
      await dropTable(url, table(schema, 'sessions'));
      return { destructive: true };
    },
  },
];

async function runActionCase(env: PgEnv, testCase: ActionCase): Promise<Checker> {
  const schema = scratchSchema();
  const check = new Checker();
  // A superuser creates the tables; the store then runs as a role that only uses them.
  const setup = await check.attempt('create the schema', () => openDirect(env, schema));
  if (!setup.ok) return check;
  await setup.value.close();
  const role = await scratchRole(env.url, schema);
  try {
    const model = new WorkloadModel();
    const populated = await check.attempt('open as the role', () => openDirect(env, schema, role.url));
    if (!populated.ok) return check;
    await runWorkload(populated.value, model, check, { checkFailedAppend: false });
    await check.attempt('close', () => populated.value.close());
    for (const session of model.sessions.values()) session.created = false;
    const inflicted = await testCase.inflict({ url: env.url, schema, role: role.role });
    const open = () =>
      env.open({ connectionString: role.url, schema, onWarning: () => undefined, ...inflicted.storeOptions });
    await probeStore(open, model, check, inflicted.destructive);
    await inflicted.release?.();
    if (inflicted.destructive) {
      // "Restored" by reopening: the store must refuse or keep reporting the loss, never absence.
      await probeStore(() => openDirect(env, schema, role.url), model, check, true);
    } else {
      await reopenAndVerifyPg(env, schema, model, check, role.url);
    }
    return check;
  } finally {
    await role.drop();
    await dropSchema(env.url, schema);
  }
}

/** Every administrator-fault case, one run each; returns the runs made. */
export async function actionCellsPg(env: PgEnv): Promise<number> {
  let done = 0;
  for (const testCase of PG_ACTION_CASES) {
    if (env.report.enough) break;
    const check = await runActionCase(env, testCase);
    env.report.add(env.backend, testCase.name, testCase.name, check.outcome, true);
    done++;
    env.progress?.(`${env.backend} server actions`, done, PG_ACTION_CASES.length);
  }
  return done;
}
