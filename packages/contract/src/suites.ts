import type { ContractCheck } from './harness.js';

/**
 * The suites of the contract, in the order `runStoreContract` registers them. A suite is one group
 * of checks (its `describe` block, named as in the test output) and the unit that the `only` and
 * `skip` options of `runStoreContract` select.
 */
export const contractSuites = [
  'round trip',
  'create',
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

const validSuites: ReadonlySet<string> = new Set(contractSuites);

/** Fails on a filter that is not a list of suite names, naming the valid ones. */
function suitesOf(option: 'only' | 'skip', names: unknown): readonly ContractSuite[] | undefined {
  if (names === undefined) return undefined;
  const list = `the suites are: ${contractSuites.map((s) => JSON.stringify(s)).join(', ')}`;
  if (!Array.isArray(names))
    throw new TypeError(`runStoreContract: ${option} must be a list of suites; ${list}`);
  const unknown = names.filter((name) => typeof name !== 'string' || !validSuites.has(name));
  if (unknown.length > 0) {
    const named = unknown.map((name) => JSON.stringify(name) ?? String(name)).join(', ');
    throw new Error(`runStoreContract: unknown suite ${named} in ${option}; ${list}`);
  }
  return names as ContractSuite[];
}

/**
 * The checks of `checks` that belong to the suites `filter` selects, in their order. Checks of a
 * group that is no suite (a backend's own) are kept unless `only` is given.
 *
 * @throws Error when `only` or `skip` names an unknown suite (the message lists the valid ones), or
 * when the filter leaves no check to run.
 */
export function selectChecks(checks: readonly ContractCheck[], filter: SuiteFilter = {}): ContractCheck[] {
  const only = suitesOf('only', filter.only);
  const skip = suitesOf('skip', filter.skip);
  const selected = checks.filter(
    (check) =>
      (only === undefined || only.length === 0 || only.includes(check.group as ContractSuite)) &&
      !skip?.includes(check.group as ContractSuite),
  );
  if (selected.length === 0) {
    throw new Error(
      `runStoreContract: only ${JSON.stringify(filter.only ?? [])} and skip ${JSON.stringify(filter.skip ?? [])} leave no check to run`,
    );
  }
  return selected;
}
