import type { StoreOptions } from '@tidemark/core';
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
      'open refuses an unknown or misspelt option with INVALID naming it',
      'a batch with one bad event is rejected whole, with the path named, and the same seq then works',
    ]) {
      await expect(runContractCheck(contractCheck(name), dropsOptions), name).rejects.toThrow();
    }
  });

  // Guards the options check: a factory that keeps only the names it knows (a backend calling
  // `super(options, where)` without its option names) accepts a typo silently and must fail it.
  it('a backend that ignores unknown option names fails the options check', async () => {
    const base = memoryDriver();
    const known = new Set(['durability', 'boundaryTypes', 'maxEventBytes', 'maxDepth']);
    const keep = (options?: StoreOptions) =>
      options === undefined
        ? undefined
        : (Object.fromEntries(Object.entries(options).filter(([name]) => known.has(name))) as StoreOptions);
    const lenient = {
      ...base,
      name: 'lenient options',
      open: (options?: StoreOptions) => base.open(keep(options)),
    };
    await expect(
      runContractCheck(
        contractCheck('open refuses an unknown or misspelt option with INVALID naming it'),
        lenient,
      ),
    ).rejects.toThrow(/unknown option "durabilty": expected INVALID, but it succeeded/);
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
