import type { EngineHarnessDriver, ServerFaultContext } from '@tidemark/faults';
import { emptyOutcome } from '@tidemark/faults';
import { openPostgresStore } from '../index.js';
import { actionCellsPg } from './pg-action-cells.js';
import { dropSchema, type PgEnv, type PostgresOpener, scratchSchema, serverUnreachable } from './pg-env.js';
import { proxyCellsPg } from './pg-proxy-cells.js';
import { restartCellPg } from './pg-restart-cell.js';
import { statementSweepPg } from './pg-statement-cells.js';

/** The default server: `TIDEMARK_PG_URL`, else the local one (trust authentication, superuser). */
export function defaultPostgresUrl(): string {
  return process.env.TIDEMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
}

/** Groups of PostgreSQL cells. */
export type PgCellGroup = 'statements' | 'proxy' | 'restart' | 'actions';

/** Options of {@link postgresDriver}. */
export interface PostgresDriverOptions {
  /** A superuser connection string (default {@link defaultPostgresUrl}). */
  url?: string;
  /** Opens the store (default: this package's `openPostgresStore`). */
  open?: PostgresOpener;
  /**
   * An unreachable server is a failing cell rather than an `n/a` one (default: `CI=true`, where
   * the PostgreSQL cells must run).
   */
  requireServer?: boolean;
  /** Immediate restarts of the writer-loop cell (default 20; quick 2). */
  restarts?: number;
  /** Cell groups to run (default all). */
  cells?: readonly PgCellGroup[];
  /** Report row backend name (default `postgres`). */
  name?: string;
}

function inCi(): boolean {
  return process.env.CI === 'true' || process.env.CI === '1';
}

/**
 * `@tidemark/postgres` as an engine driver with server-only fault classes, each a set of cells in
 * the same matrix, checked with the same invariants: the statement sweep (every statement × every
 * SQLSTATE class, and a real `pg_terminate_backend`), a TCP fault proxy (drop, blackhole, delay,
 * cut after N bytes both ways, write-then-cut), immediate server restarts under a writer loop, and
 * REVOKE, DROP TABLE, a read-only role, lock and statement timeouts. Without a server the cells are
 * `n/a`, or one failing cell when {@link PostgresDriverOptions.requireServer} (CI).
 */
export function postgresDriver(options: PostgresDriverOptions = {}): EngineHarnessDriver {
  const name = options.name ?? 'postgres';
  const url = options.url ?? defaultPostgresUrl();
  const groups = new Set<PgCellGroup>(options.cells ?? ['statements', 'proxy', 'restart', 'actions']);
  return {
    name,
    kind: 'engine',
    injectsSteps: false,
    async create() {
      const open: PostgresOpener = options.open ?? openPostgresStore;
      const schema = scratchSchema();
      return {
        open: () => open({ connectionString: url, schema, onWarning: () => undefined }),
        destroy: () => dropSchema(url, schema),
      };
    },
    serverFaults: {
      async run(context: ServerFaultContext) {
        const open: PostgresOpener = options.open ?? openPostgresStore;
        const unreachable = await serverUnreachable(url);
        if (unreachable !== undefined) {
          const required = options.requireServer ?? inCi();
          if (!required) {
            context.report.notApplicable(
              name,
              'pg: server',
              `cannot run (${unreachable}); set TIDEMARK_PG_URL`,
            );
            return { operations: 0, runs: 0 };
          }
          const outcome = emptyOutcome();
          outcome.violations.push({
            kind: 'not-run',
            detail: `the PostgreSQL cells must run (CI=true) but cannot: ${unreachable}`,
          });
          context.report.add(name, 'pg: server', 'connect', outcome, false);
          return { operations: 0, runs: 0 };
        }
        const env: PgEnv = {
          backend: name,
          url,
          open,
          quick: context.quick,
          report: context.report,
          ...(context.progress && { progress: context.progress }),
        };
        let operations = 0;
        let runs = 0;
        if (groups.has('statements')) {
          const swept = await statementSweepPg(env);
          operations = swept.operations;
          runs += swept.runs;
        }
        if (groups.has('proxy')) runs += await proxyCellsPg(env);
        if (groups.has('actions')) runs += await actionCellsPg(env);
        if (groups.has('restart'))
          runs += await restartCellPg(env, options.restarts ?? (context.quick ? 2 : 20));
        return { operations, runs };
      },
    },
  };
}
