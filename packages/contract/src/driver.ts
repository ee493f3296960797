import type { SessionStore, StoreOptions } from '@tidemark/core';
import type { SuiteFilter } from './suite-names.js';

/**
 * How the contract suite reaches a backend. A backend author implements this in a few lines and
 * calls `runStoreContract(driver)` from a vitest file.
 */
export interface ContractDriver {
  /** Backend name shown in test titles. */
  name: string;
  /** Opens a store over fresh, empty storage. Called at least once per test. */
  open(options?: StoreOptions): Promise<SessionStore>;
  /**
   * Opens another store over the same storage as `store`: a restart (after `store.close()`) or a
   * second live instance (while `store` is open), as another process would.
   */
  reopen(store: SessionStore, options?: StoreOptions): Promise<SessionStore>;
  /**
   * Called after each test and between the sequences of the model-based test: removes everything
   * `open` created. Stores are closed by then; it must also work when there is nothing to remove.
   */
  cleanup(): Promise<void>;
}

/**
 * Options of `runStoreContract` (and of `runContractCheck`, which ignores `only` and `skip`).
 * `only`/`skip` take suite names, e.g. `{ only: ['append', 'list', 'model'] }`; see `contractSuites`.
 */
export interface ContractOptions extends SuiteFilter {
  /** Number of random command sequences of the model-based test (default 50). */
  modelRuns?: number;
  /** Time per test in milliseconds (default 30,000; the model-based test gets four times as much). */
  timeout?: number;
  /** fast-check seed of the model-based test, to replay a failure it reported (default: random). */
  seed?: number;
}
