// `@tidemark/sqlite/harness`: the SQLite driver of the storage-fault harness and its own checks.
import { sqliteDriver } from './driver.js';

export * from './driver.js';
export * from './powerloss.js';
export * from './race-powerloss.js';
export * from './settings.js';

/** The harness loads the default export: the driver with the backend's default options. */
export default sqliteDriver;
