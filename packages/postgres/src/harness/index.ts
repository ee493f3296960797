// Server-only faults for engine backends that talk to a PostgreSQL server.
export * from './fault-proxy.js';
export * from './pg-driver.js';
export type { PostgresOpener, PostgresOpenOptions } from './pg-env.js';
export * from './pg-wire.js';
export * from './private-cluster.js';
export * from './server-actions.js';
export * from './statement-faults.js';
