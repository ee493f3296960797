// `@tidemark/postgres/harness`: the PostgreSQL driver of the storage-fault harness, and the
// server-only fault machinery it is built from (a TCP fault proxy, a private cluster, server
// actions, statement faults), usable by any backend that talks to a PostgreSQL server.
import { postgresDriver } from './pg-driver.js';

export * from './fault-proxy.js';
export * from './pg-driver.js';
export type { PostgresOpener, PostgresOpenOptions } from './pg-env.js';
export * from './pg-wire.js';
export * from './private-cluster.js';
export * from './server-actions.js';
export * from './statement-faults.js';

/**
 * The harness loads the default export: the driver on `TIDEMARK_PG_URL` (or the local server);
 * without a reachable server its cells are `n/a` (a failing cell with `CI=true`).
 */
export default postgresDriver;
