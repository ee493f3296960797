// options: a factory refuses an option name it does not know (contract §6), through the driver's
// `open`, which passes the options on to the factory as a user's code would.
import type { StoreOptions } from '@tidemark/core';
import { type ContractCheck, evs, expectCode, violation } from '../harness.js';
import { eventsOf, materialize } from './support.js';

/** Options as a caller's JavaScript (or a cast) may pass them: the types do not stop a typo. */
function untyped(options: Record<string, unknown>): StoreOptions {
  return options as StoreOptions;
}

/** The checks of the `options` group. */
export const optionsChecks: ContractCheck[] = [
  {
    group: 'options',
    name: 'open refuses an unknown or misspelt option with INVALID naming it',
    async run(ctx) {
      // A misspelt shared option, then a name no backend has: a misspelt root or path would
      // otherwise open another store, whose emptiness looks like absence.
      for (const name of ['durabilty', 'boundaryType', 'tidemarkNoSuchOption']) {
        await expectCode(
          ctx.open(untyped({ [name]: 'strict' })),
          'INVALID',
          `open with the unknown option ${JSON.stringify(name)}`,
          name,
        );
      }
      await expectCode(
        ctx.open(untyped({ durability: 'sometimes' })),
        'INVALID',
        "open with durability: 'sometimes'",
        'durability',
      );
      // The same driver opens and writes with valid options: the refusals above were the options'.
      const store = await ctx.open({ durability: 'strict', boundaryTypes: ['turn/end'] });
      await materialize(store, 'opened', evs(0, 2));
      const loaded = await eventsOf(store, 'opened');
      if (loaded.length !== 2) violation(`load after open returned ${loaded.length} events, not 2`);
    },
  },
];
