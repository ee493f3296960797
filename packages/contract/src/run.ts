import { afterEach, describe, it } from 'vitest';
import { contractChecks } from './checks/index.js';
import type { ContractDriver, ContractOptions } from './driver.js';
import { CheckContext, type ContractCheck, resolveOptions, runInContext } from './harness.js';
import { modelBasedCheck } from './model/index.js';
import { selectChecks } from './suites.js';

/**
 * Registers the tidemark conformance suite for a backend as a vitest `describe` block. Call it at
 * the top level of a test file:
 *
 * ```ts
 * runStoreContract({ name: 'my-backend', open, reopen, cleanup });
 * ```
 *
 * Every check of docs/contract.md that needs no fault injection becomes one `it()`, grouped by
 * operation, plus one model-based property test comparing the backend with the memory reference
 * model. A check about a capability the store does not claim (`capabilities.appendAfter`) is
 * reported as skipped, with the reason. `driver.cleanup()` runs after each test. `options.only` and `options.skip` select suites by name
 * (`contractSuites`), e.g. `{ only: ['append', 'list', 'model'] }` or `{ skip: ['model'] }`.
 *
 * @throws Error when `only` or `skip` names an unknown suite (the message lists the valid ones) or
 * leaves nothing to run.
 */
export function runStoreContract(driver: ContractDriver, options?: ContractOptions): void {
  const resolved = resolveOptions(options);
  const checks: ContractCheck[] = selectChecks(
    [...contractChecks, modelBasedCheck(resolved.modelRuns)],
    options,
  );
  describe(`tidemark store contract: ${driver.name}`, () => {
    afterEach(async () => {
      await driver.cleanup();
    });
    const groups = [...new Set(checks.map((check) => check.group))];
    for (const group of groups) {
      describe(group, () => {
        for (const check of checks.filter((c) => c.group === group)) {
          it(
            check.name,
            async (test) => {
              const context = new CheckContext(driver, resolved);
              try {
                // A check about a capability the store does not claim: skipped, with the reason.
                const skipped = await runInContext(check, context);
                if (skipped !== undefined) test.skip(skipped);
              } finally {
                await context.closeAll();
              }
            },
            // The model-based test runs many sequences; give it proportionally more time.
            check.group === 'model' ? resolved.timeout * 4 : resolved.timeout,
          );
        }
      });
    }
  });
}
