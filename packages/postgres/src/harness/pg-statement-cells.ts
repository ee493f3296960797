// The statement-level sweep of the PostgreSQL driver (SQLite's method, over the wire): for every
// statement N the workload sends, a run where statement N fails with each SQLSTATE class (nothing
// sent), and one where its backend is really ended with pg_terminate_backend before it is sent.

import type { WorkloadStep } from '@tidemark/faults';
import { reportCoverage } from '@tidemark/faults';
import {
  dropSchema,
  emptySchema,
  harnessPool,
  openOnPool,
  type PgEnv,
  scratchSchema,
  sharedSchema,
  workloadThenVerify,
} from './pg-env.js';
import {
  FAULT_SQLSTATE_LIST,
  FAULT_SQLSTATES,
  type FaultSqlState,
  faultyPool,
  type StatementFaultPlan,
} from './statement-faults.js';

/** One run of the sweep. */
interface StatementRun {
  plan: StatementFaultPlan | undefined;
  faultClass: string;
}

/**
 * The workload once, statement `plan.at` faulted; the checker, the statements sent and the faults
 * injected. `reuse`: a schema already migrated, emptied first (quick runs: the migration's own
 * statements are then not swept, and each run is several times cheaper).
 */
async function runWithPlan(env: PgEnv, plan: StatementFaultPlan | undefined, reuse?: string) {
  const schema = reuse ?? scratchSchema();
  if (reuse !== undefined) await emptySchema(env.url, reuse);
  const pool = harnessPool({ connectionString: env.url });
  const faulty = faultyPool(pool, plan);
  try {
    const once = plan !== undefined && (plan.mode ?? 'once') === 'once';
    const { check } = await workloadThenVerify(
      env,
      schema,
      () => openOnPool(env, schema, faulty),
      // A once fault is spent when it fires, and nothing of the failed statement reached the
      // server (an error is injected before sending; a terminated backend never runs it): a
      // rejected append must have left the log as it was.
      { checkFailedAppend: once },
      () => faulty.faults.lift(),
    );
    return { check, trace: [...faulty.faults.trace], injected: faulty.faults.injected };
  } finally {
    await pool.end().catch(() => undefined);
    if (reuse === undefined) await dropSchema(env.url, schema);
  }
}

/** Quick runs give each statement one SQLSTATE in turn, so every class still meets every kind of statement. */
function plansFor(statements: number, quick: boolean): StatementRun[] {
  const runs: StatementRun[] = [];
  for (let at = 1; at <= statements; at++) {
    const states: readonly FaultSqlState[] = quick
      ? [FAULT_SQLSTATE_LIST[(at - 1) % FAULT_SQLSTATE_LIST.length]!]
      : FAULT_SQLSTATE_LIST;
    for (const sqlstate of states)
      runs.push({ plan: { at, fault: { kind: 'error', sqlstate } }, faultClass: `pg: ${sqlstate} once` });
    const persistent: readonly FaultSqlState[] = quick
      ? at % 12 === 1
        ? ['08006']
        : []
      : ['08006', '42501'];
    for (const sqlstate of persistent)
      runs.push({
        plan: { at, fault: { kind: 'error', sqlstate }, mode: 'persistent' },
        faultClass: `pg: ${sqlstate} persistent`,
      });
    if (!quick || at % 6 === 1)
      runs.push({ plan: { at, fault: { kind: 'terminate' } }, faultClass: 'pg: terminate backend' });
  }
  return runs;
}

function describe(run: StatementRun, trace: readonly string[]): string {
  const plan = run.plan!;
  const sql = (trace[plan.at - 1] ?? '?').replace(/\s+/g, ' ').slice(0, 48);
  const what =
    plan.fault.kind === 'terminate'
      ? 'pg_terminate_backend'
      : `${plan.fault.sqlstate} ${FAULT_SQLSTATES[plan.fault.sqlstate].name} ${plan.mode ?? 'once'}`;
  return `${what} at statement ${plan.at} (${sql})`;
}

/**
 * The statement sweep: a clean run counts the statements; then every statement is failed with the
 * SQLSTATE classes (all ten once, 08006 and 42501 persistent; quick: one class per statement in
 * turn; a terminated backend at every sixth statement, 08006 persistent at every twelfth) and
 * ended with pg_terminate_backend. Ends with the fault-coverage cell.
 */
export async function statementSweepPg(env: PgEnv): Promise<{ operations: number; runs: number }> {
  const reuse = await sharedSchema(env);
  try {
    return await sweep(env, reuse);
  } finally {
    if (reuse !== undefined) await dropSchema(env.url, reuse);
  }
}

async function sweep(env: PgEnv, reuse: string | undefined): Promise<{ operations: number; runs: number }> {
  const baseline = await runWithPlan(env, undefined, reuse);
  env.report.add(env.backend, 'pg: no fault (baseline)', 'baseline', baseline.check.outcome, false);
  const runs = plansFor(baseline.trace.length, env.quick);
  const failed = new Set<WorkloadStep['kind']>();
  let done = 0;
  for (const run of runs) {
    if (env.report.enough) break;
    const result = await runWithPlan(env, run.plan, reuse);
    for (const kind of result.check.failedOps) failed.add(kind);
    env.report.add(
      env.backend,
      run.faultClass,
      describe(run, baseline.trace),
      result.check.outcome,
      result.injected > 0,
    );
    done++;
    env.progress?.(`${env.backend} statement sweep`, done, runs.length);
  }
  reportCoverage(env.report, env.backend, failed, !env.report.enough);
  return { operations: baseline.trace.length, runs: runs.length + 1 };
}
