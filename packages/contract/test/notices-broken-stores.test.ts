import { describe, expect, it } from 'vitest';
import { contractCheck, contractChecks, modelBasedCheck, runContractCheck } from '../src/index.js';
import { brokenStores } from './fixtures/broken-stores.js';
import { memoryDriver } from './fixtures/memory-driver.js';

// The kit is only worth something if it notices a broken backend. Each store below wraps the
// correct memory store and breaks one rule; the checks that name that rule must reject.

describe('the contract notices deliberately broken stores', () => {
  for (const broken of brokenStores) {
    describe(broken.name, () => {
      for (const name of broken.caughtBy) {
        it(`fails: ${name}`, async () => {
          const driver = memoryDriver(`broken: ${broken.name}`, broken.wrap);
          await expect(runContractCheck(contractCheck(name), driver)).rejects.toThrow();
        });
      }
      if (broken.modelCatches) {
        // The model test is random: a run stops at the first sequence that exposes the bug. Measured
        // over 40 seeds, the rarest of these needed at most 106 sequences (median 18), so 1,000
        // keeps a miss far below once per million CI runs without slowing the ones that catch.
        it('fails the model-based test', async () => {
          const driver = memoryDriver(`broken: ${broken.name}`, broken.wrap);
          await expect(runContractCheck(modelBasedCheck(1000), driver)).rejects.toThrow(
            /backend answered|listed before|appeared twice|problems/,
          );
        });
      }
    });
  }

  // Guards the checks that need store options: they must fail when the driver does not pass them on.
  it('a driver that drops the store options fails the checks that depend on them', async () => {
    const base = memoryDriver();
    const dropsOptions = {
      ...base,
      open: () => base.open(),
      reopen: (store: Parameters<typeof base.reopen>[0]) => base.reopen(store),
    };
    for (const name of [
      'custom boundaryTypes replace the defaults',
      'a batch with one bad event is rejected whole, with the path named, and the same seq then works',
    ]) {
      await expect(runContractCheck(contractCheck(name), dropsOptions), name).rejects.toThrow();
    }
  });

  it('a correct store passes every check when run directly', async () => {
    for (const check of contractChecks) await runContractCheck(check, memoryDriver());
  });

  // Guards the fixtures: wrapping a store breaks nothing by itself, so each failure above is the rule's.
  it('a pass-through wrapper passes every check, so failures above come from the broken rule', async () => {
    const driver = memoryDriver('pass-through', (inner) => inner);
    for (const check of contractChecks) await runContractCheck(check, driver);
  });
});
