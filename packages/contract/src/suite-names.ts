// The names of the contract's suites and the filter over them. No imports: the driver's options
// and the suite selection both build on these names.

/**
 * The suites of the contract, in the order `runStoreContract` registers them. A suite is one group
 * of checks (its `describe` block, named as in the test output) and the unit that the `only` and
 * `skip` options of `runStoreContract` select.
 */
export const contractSuites = [
  'round trip',
  'create',
  'options',
  'append',
  'load',
  'boundary',
  'read',
  'list',
  'update',
  'delete',
  'close',
  'one instance',
  'two instances',
  'model',
] as const;

/** The name of one suite of the contract: `'append'`, `'list'`, `'two instances'`, `'model'`, … */
export type ContractSuite = (typeof contractSuites)[number];

/** The `only` and `skip` options of `runStoreContract`. */
export interface SuiteFilter {
  /** Run just these suites (an empty list is no filter, as in LangGraph's `specTest`). */
  only?: readonly ContractSuite[];
  /** Leave these suites out (applied after `only`). */
  skip?: readonly ContractSuite[];
}
