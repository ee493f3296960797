import type { ContractCheck } from './harness.js';
import { type ContractSuite, contractSuites, type SuiteFilter } from './suite-names.js';

export { type ContractSuite, contractSuites, type SuiteFilter } from './suite-names.js';

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
